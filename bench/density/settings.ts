/**
 * bench/density's flags, targets and verdicts, read once when the bench starts (`tsx bench/density.ts
 * --max 320 …`): every part of the bench (bench/density/*.ts) reads them from here.
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { createDockerClient, type DockerClient } from "../../agent/docker/client";
import { positiveInt } from "../support/args";
import { verdicts } from "../support/verdict";

export const TARGET = { pods: 300, agentCpuPercent: 2 };
export const v = verdicts("density");
export const CHECKPOINTS = [50, 200];
export const IMAGE = "podhost/static:latest";
export const POLL_MS = 20;
/** what the next batch is assumed to take of MemAvailable before it is made (a static pod is ~15–25 MB) */
export const MB_PER_POD_ESTIMATE = 64;

const { values: args } = parseArgs({
  options: {
    max: { type: "string", default: "320" },
    batch: { type: "string", default: "10" },
    probes: { type: "string", default: "5" },
    "idle-s": { type: "string", default: "60" },
    "interval-s": { type: "string", default: "60" },
    "list-reps": { type: "string", default: "20" },
    "min-available-mb": { type: "string", default: "4096" },
    "keep-networks": { type: "string", default: "16" },
  },
});
export const MAX = positiveInt("max", args.max);
export const BATCH = positiveInt("batch", args.batch);
export const PROBES = positiveInt("probes", args.probes);
export const IDLE_S = positiveInt("idle-s", args["idle-s"]);
export const INTERVAL_S = positiveInt("interval-s", args["interval-s"]);
export const LIST_REPS = positiveInt("list-reps", args["list-reps"]);
export const MIN_AVAILABLE_MB = positiveInt("min-available-mb", args["min-available-mb"]);
export const KEEP_NETWORKS = positiveInt("keep-networks", args["keep-networks"]);

export const run = promisify(execFile);
export const docker: DockerClient = createDockerClient("/var/run/docker.sock");
export const now = () => performance.now();
export const MB = 1024 * 1024;
