/**
 * What the parts of bench/lifecycle share: the bench's state (its stack, API client, floor, the agent's
 * log and the pods made so far), the agent's own timings per command, and the tables' rows.
 */
import type { apiClient } from "../../test/e2e/support/api";
import type { Stack } from "../../test/e2e/support/stack";
import { httpGet } from "../../test/support/http";
import { fmt, median, percentile } from "../stats";
import { until } from "../support/probe";
import type { ProcessReading } from "../support/sampling";
import type { Floor } from "./floor";
import { POD_DOMAIN } from "./settings";

export type Api = ReturnType<typeof apiClient>;

/** VmRSS and VmHWM (peak RSS) of the agent's process, in kB. */
export type Memory = Pick<ProcessReading, "rssKb" | "hwmKb">;

export interface Bench {
  stack: Stack;
  api: Api;
  floor: Floor;
  agentLog: AgentLog;
  agentPid: number;
  /** pods created through the API so far, oldest first */
  pods: string[];
}

export const nextPodName = (b: Bench) => `lc-${String(b.pods.length + 1).padStart(2, "0")}`;

export type AgentLog = ReturnType<typeof watchAgentCommands>;

/** The agent's "command done" log lines: per op, the ms of each run in order (the agent's own view). */
export function watchAgentCommands(stack: Stack) {
  const done = new Map<string, number[]>();
  let buffered = "";
  stack.agent.child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.includes('"command done"')) continue;
      try {
        const entry = JSON.parse(line) as { op?: string; ms?: number };
        if (!entry.op || typeof entry.ms !== "number") continue;
        const runs = done.get(entry.op) ?? [];
        runs.push(entry.ms);
        done.set(entry.op, runs);
      } catch {
        // a line that is not ours
      }
    }
  });
  /** `count(op)` before a phase, `since(op, count)` after it: the ms of each `op` logged in between. */
  return {
    count: (op: string) => done.get(op)?.length ?? 0,
    since: (op: string, from: number) => (done.get(op) ?? []).slice(from),
  };
}

/** Until the pod's page answers 200 through the ingress, polled every `intervalMs`; the time it first did. */
export const pageAnswers = (stack: Stack, name: string, intervalMs: number) =>
  until(
    `${name}'s page`,
    async () => {
      const page = await httpGet(stack.edgePort, `${name}.${POD_DOMAIN}`).catch(() => null);
      return page?.status === 200;
    },
    intervalMs,
  );

export const p50 = (samples: number[]) => fmt(median(samples), 0);
export const p90 = (samples: number[]) => fmt(percentile(samples, 90), 0);
export const ratio = (a: number, b: number) => `${fmt(a / b)}x`;

/** A row of a "path, n, p50, p90, ratios" table. */
export const row = (label: string, samples: number[], ...floors: number[]) => [
  label,
  String(samples.length),
  p50(samples),
  p90(samples),
  ...floors.map((f) => ratio(median(samples), f)),
];

/** One untimed run of each variant, then `reps` rounds in which they take turns in rotating order. */
export async function interleaved(variants: ((timed: boolean) => Promise<void>)[], reps: number) {
  for (const v of variants) await v(false);
  for (let rep = 0; rep < reps; rep++) {
    for (let i = 0; i < variants.length; i++) await variants[(i + rep) % variants.length]?.(true);
  }
}
