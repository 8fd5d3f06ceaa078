/**
 * bench/scale's flags, targets and verdicts, read once when the bench starts (`tsx bench/scale.ts --agents
 * 1000 …`), and what to undo on Ctrl-C: every part of the bench (bench/scale/*.ts) reads them from here.
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { positiveInt } from "../support/args";
import { verdicts } from "../support/verdict";

export const TARGET = { ratio: 1.2, agents: 1000, metricsPerSecond: (1000 * 50) / 60 };
export const v = verdicts("scale");
/** the real agent's cadences (agent/connection/socket.ts, agent/config.ts) */
export const HEARTBEAT_MS = 15_000;
export const METRICS_MS = 60_000;
/** samples per agent:metrics message, as agent/metrics/watch.ts sends them */
export const METRICS_BATCH = 500;
export const PODS_PER_TEAM = 5;

const { values: args } = parseArgs({
  options: {
    agents: { type: "string", default: "1000" },
    pods: { type: "string", default: "100000" },
    "floor-pods": { type: "string", default: "1000" },
    users: { type: "string", default: "100" },
    rounds: { type: "string", default: "8" },
    requests: { type: "string", default: "300" },
    concurrency: { type: "string", default: "8" },
    creates: { type: "string", default: "6" },
    "heartbeat-seconds": { type: "string", default: "8" },
    "metrics-seconds": { type: "string", default: "20" },
    "metrics-speed": { type: "string", default: "4" },
    "connect-parallel": { type: "string", default: "50" },
  },
});
export const AGENTS = positiveInt("agents", args.agents);
export const FLEET_PODS = positiveInt("pods", args.pods);
export const FLOOR_PODS = positiveInt("floor-pods", args["floor-pods"]);
export const USERS = positiveInt("users", args.users);
export const ROUNDS = positiveInt("rounds", args.rounds);
export const REQUESTS = positiveInt("requests", args.requests);
export const CONCURRENCY = positiveInt("concurrency", args.concurrency);
export const CREATES = positiveInt("creates", args.creates);
export const HEARTBEAT_SECONDS = positiveInt("heartbeat-seconds", args["heartbeat-seconds"]);
export const METRICS_SECONDS = positiveInt("metrics-seconds", args["metrics-seconds"]);
export const METRICS_SPEED = positiveInt("metrics-speed", args["metrics-speed"]);
export const CONNECT_PARALLEL = positiveInt("connect-parallel", args["connect-parallel"]);

export const run = promisify(execFile);
export const now = () => performance.now();

/** What to undo on Ctrl-C (the finally blocks do it otherwise): Workers to stop, temp dirs to remove. */
export const undo = new Set<() => Promise<unknown>>();
process.once("SIGINT", () => {
  console.error("\ninterrupted: cleaning up");
  void Promise.allSettled([...undo].map((f) => f())).finally(() => process.exit(130));
});
