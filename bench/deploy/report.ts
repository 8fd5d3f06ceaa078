/**
 * bench/deploy's table (medians of the repetitions, ours beside the floor), where the last repetition's
 * time went (the agent's own log lines, what the pod's address answered) and its verdicts.
 */
import type { DeployLogMessage } from "../../agent/git/log";
import { fmt, formatTable, median } from "../stats";
import { machineLoad } from "../support/sampling";
import { agentLines } from "./ours";
import { REPS, TARGET, v } from "./settings";

/** Every repetition's figures, in ms: ours (until the new commit answers, until pod.deploy answered), the floor's. */
export type Samples = Record<
  "firstOurs" | "firstOursAnswered" | "firstFloor" | "warmOurs" | "warmOursAnswered" | "warmFloor",
  number[]
>;

/** What the repetitions gathered. */
export interface Runs {
  samples: Samples;
  firstFailed: number;
  firstRequests: number;
  warmFailed: number;
  warmRequests: number;
  failureNotes: string[];
  /** the machine's load after each repetition */
  loads: string[];
  /** the deployment ids of the last repetition: first, code-only */
  lastIds: [string, string];
  /** what the pod's address answered during the last repetition's deploys */
  lastChanges: [string[], string[]];
  /** the agent's deploy log */
  messages: DeployLogMessage[];
}

export function report(runs: Runs): void {
  const { samples, firstFailed, firstRequests, warmFailed, warmRequests, failureNotes, loads, lastIds } =
    runs;
  const { lastChanges, messages } = runs;
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])) as Record<
    keyof typeof samples,
    number
  >;
  console.log(`\nmedians of ${REPS} repetitions (variants interleaved, order rotating):\n`);
  console.log(
    formatTable(
      ["measure", "ours (p50)", "floor (p50)", "ratio"],
      [
        [
          "first deploy: deploy → new commit answers",
          `${fmt(m.firstOurs, 0)} ms`,
          `${fmt(m.firstFloor, 0)} ms`,
          `${fmt(m.firstOurs / m.firstFloor)}x`,
        ],
        [
          "  … until pod.deploy answered",
          `${fmt(m.firstOursAnswered, 0)} ms`,
          "",
          `${fmt(m.firstOursAnswered / m.firstFloor)}x`,
        ],
        [
          "code-only deploy: deploy → new commit answers",
          `${fmt(m.warmOurs, 0)} ms`,
          `${fmt(m.warmFloor, 0)} ms`,
          `${fmt(m.warmOurs / m.warmFloor)}x`,
        ],
        [
          "  … until pod.deploy answered",
          `${fmt(m.warmOursAnswered, 0)} ms`,
          "",
          `${fmt(m.warmOursAnswered / m.warmFloor)}x`,
        ],
        ["failed requests during first deploys", `${firstFailed} of ${firstRequests}`, "", ""],
        ["failed requests during code-only deploys", `${warmFailed} of ${warmRequests}`, "", ""],
      ],
    ),
  );
  console.log(
    `\nfloor: first = git clone --depth 1 + npm ci (warm cache) + node server.js + port answers; code-only = git fetch --depth 1 + checkout + app restarted + port answers`,
  );
  console.log(
    `samples (ms): ${JSON.stringify(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map((x) => Math.round(x))])))}`,
  );
  for (const note of failureNotes) console.log(`note: ${note}`);
  console.log(`\nwhere the last repetition's time went (the agent's own log lines):`);
  console.log(`first deploy (${lastIds[0]}):\n  ${agentLines(messages, lastIds[0]).join("\n  ")}`);
  console.log(`  what the pod's address answered: ${lastChanges[0].join(", ")}`);
  console.log(`code-only deploy (${lastIds[1]}):\n  ${agentLines(messages, lastIds[1]).join("\n  ")}`);
  console.log(`  what the pod's address answered: ${lastChanges[1].join(", ")}`);
  console.log(`\nmachine per repetition: ${loads.join(" | ")}`);
  console.log(`machine at the end: ${machineLoad()}`);
  v.ratio({
    figure: "first deploy → new commit answers vs clone + npm ci + node + port",
    ours: m.firstOurs,
    floor: m.firstFloor,
    target: TARGET.firstRatio,
    unit: "ms",
  });
  v.ratio({
    figure: "code-only deploy → new commit answers vs fetch + checkout + restart + port",
    ours: m.warmOurs,
    floor: m.warmFloor,
    target: TARGET.warmRatio,
    unit: "ms",
  });
  v.absolute({
    figure: `failed requests during the deploys (of ${firstRequests + warmRequests})`,
    value: firstFailed + warmFailed,
    limit: TARGET.failed,
    unit: "",
  });
  v.finish();
}
