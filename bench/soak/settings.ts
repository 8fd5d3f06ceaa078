/**
 * bench/soak's flags, goals and verdicts, read once when the soak starts (`tsx bench/soak.ts --minutes 10
 * …`): every part of the soak (bench/soak/*.ts) reads them from here.
 */
import { parseArgs } from "node:util";
import { positiveInt } from "../support/args";
import { verdicts } from "../support/verdict";

export const v = verdicts("soak");

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "30" },
    tenants: { type: "string", default: "10" },
    "sample-s": { type: "string", default: "60" },
    "think-ms": { type: "string", default: "2000" },
    "heap-dir": { type: "string" },
  },
});
export const MINUTES = Number(args.minutes);
if (!Number.isFinite(MINUTES) || MINUTES <= 0)
  throw new Error(`--minutes: expected a positive number, got ${args.minutes}`);
export const TENANTS = positiveInt("tenants", args.tenants);
export const SAMPLE_S = positiveInt("sample-s", args["sample-s"]);
export const THINK_MS = positiveInt("think-ms", args["think-ms"]);
/** keep every sample's heap snapshot of the Worker's isolate in this directory (made if missing) */
export const HEAP_DIR = args["heap-dir"];

/** MB per minute over the last two thirds of the run, at most */
export const FLAT = {
  agentRssMbPerMin: 1,
  workerHeapMbPerMin: 0.5,
  workerdRssMbPerMin: 2,
  hostAgentStorageMbPerMin: 0.25,
};
export const MIN_SAMPLES_TO_JUDGE = 4;
/**
 * How long the HostAgent's journal keeps settled commands (JOURNAL_RETENTION_MS of
 * worker/durable-objects/host-agent/journal.ts, which this process cannot import: Workers types)
 */
export const JOURNAL_RETENTION_MS = 60 * 60_000;
/** outside ~/app, which a deploy or a restore replaces */
export const SOAK_DIR = "/home/pod_user/soak";
export const POLL_MS = 1_000;
/** per kind, how long an asynchronous operation may take before it counts as not ended */
export const LIMIT_MS = {
  create: 180_000,
  deploy: 300_000,
  backup: 300_000,
  restore: 300_000,
  service: 180_000,
};

export const now = () => performance.now();
export const mb = (bytes: number) => bytes / 1024 / 1024;
