/**
 * bench/deploy's flags, targets and verdicts, read once when the bench starts (`tsx bench/deploy.ts
 * --reps 3 …`): every part of the bench (bench/deploy/*.ts) reads them from here.
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { positiveInt } from "../support/args";
import { verdicts } from "../support/verdict";

export const TARGET = { firstRatio: 1.3, warmRatio: 1.3, failed: 0 };
export const v = verdicts("deploy");
export const DEP = { name: "ms", version: "2.1.3" };

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "3" },
    "poll-ms": { type: "string", default: "20" },
  },
});
export const REPS = positiveInt("reps", args.reps);
export const POLL_MS = positiveInt("poll-ms", args["poll-ms"]);

export const run = promisify(execFile);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const now = () => performance.now();

/** npm as the build container runs it (no audit, fund or update check), with the floor's own cache. */
export const npmEnv = (cache: string) => ({
  ...process.env,
  NPM_CONFIG_AUDIT: "false",
  NPM_CONFIG_FUND: "false",
  NPM_CONFIG_UPDATE_NOTIFIER: "false",
  NPM_CONFIG_CACHE: cache,
});
