/**
 * bench/lifecycle's flags, targets and verdicts, read once when the bench starts (`tsx bench/lifecycle.ts
 * --reps 7 …`): every part of the bench (bench/lifecycle/*.ts) reads them from here.
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { createDockerClient, type DockerClient } from "../../agent/docker/client";
import { positiveInt } from "../support/args";
import { verdicts } from "../support/verdict";

export const TARGET = {
  create: 1.5,
  createPage: 1.2,
  createPageMs: 600,
  power: 1.3,
  pingAddedMs: 5,
  rssMb: 150,
  rssPods: 50,
};
export const v = verdicts("lifecycle");
export const API_POLL_MS = 20;
export const PAGE_POLL_MS = 10;
export const IMAGE = "podhost/static:latest";
export const POD_DOMAIN = "pods.localhost";

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "7" },
    pings: { type: "string", default: "300" },
    pods: { type: "string", default: "50" },
    parallel: { type: "string", default: "4" },
  },
});
export const REPS = positiveInt("reps", args.reps);
export const PINGS = positiveInt("pings", args.pings);
export const PODS = positiveInt("pods", args.pods);
export const PARALLEL = positiveInt("parallel", args.parallel);

export const run = promisify(execFile);
export const docker: DockerClient = createDockerClient("/var/run/docker.sock");
export const now = () => performance.now();
export const mb = (kb: number) => kb / 1024;
