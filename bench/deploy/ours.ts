/**
 * bench/deploy's own side: the agent's `pod.deploy` handler called directly, timed until the pod's
 * address first answers the new commit, its address watched meanwhile; and the agent's deploy log lines.
 */
import type { DeployLogMessage } from "../../agent/git/log";
import type { HandlerTable } from "../../agent/handlers/types";
import type { DeployOutcome } from "../../shared/protocol/git";
import type { Agent } from "../../test/agent/helpers";
import { untilServes, watch } from "./probe";
import { now } from "./settings";

export interface Ours {
  /** deploy call → the pod's address first answers the new commit */
  servingMs: number;
  /** deploy call → the handler answered (the switch done, the candidate on its way out) */
  answeredMs: number;
  requests: number;
  failures: string[];
  /** what the pod's address answered, each time it changed (request sent at +s) */
  changes: string[];
}

export async function deployOurs(
  handlers: HandlerTable,
  agent: Agent,
  pod: string,
  deploymentId: string,
  url: string,
  want: string,
): Promise<Ours> {
  const host = `${pod}.pods.test`;
  const w = watch(agent.port, host, want);
  const t0 = now();
  let outcome: DeployOutcome | Error;
  try {
    outcome = await handlers["pod.deploy"](
      { name: pod, deploymentId, source: { url, branch: "main" }, preset: "nodejs", buildCommand: null },
      agent.ctx,
    );
  } catch (err) {
    outcome = err instanceof Error ? err : new Error(String(err));
  }
  const answered = now();
  const seen = await w.end();
  if (outcome instanceof Error) throw outcome;
  if (!outcome.ok) throw new Error(`deploy ${deploymentId} failed: ${outcome.class}: ${outcome.message}`);
  const served = seen.firstNew ?? (await untilServes(agent.port, want, host));
  return {
    servingMs: served - t0,
    answeredMs: answered - t0,
    requests: seen.count,
    failures: seen.failures,
    changes: seen.changes,
  };
}

/** The agent's own lines of a deploy log (`[podhost +1.2s] …`). */
export const agentLines = (messages: DeployLogMessage[], id: string) =>
  messages
    .filter((m) => m.deploymentId === id)
    .sort((a, b) => a.seq - b.seq)
    .map((m) => m.chunk)
    .join("")
    .split("\n")
    .filter((l) => l.startsWith("[podhost"));
