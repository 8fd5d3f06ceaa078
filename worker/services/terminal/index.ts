import { ok, type Result } from "../../../shared/errors";
import { newRelayId } from "../../durable-objects/transfer-relay/client";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { callTarget, podTarget } from "../pods/target";

/**
 * The dashboard's web terminal (docs/dashboard.md "Terminal"): a shell as pod_user with a pty, its
 * bytes between the caller's WebSocket and the host's agent through a TerminalRelay
 * (../../durable-objects/terminal-relay/), never through the host's control socket.
 */

/** Whether the team has the pod: another team's is the same 404 as a missing one. */
export async function terminalPod({ ctx, teamId, input }: TeamCall<{ name: string }>): Promise<Result<true>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  return found.ok ? ok(true) : found;
}

/**
 * Opens a session on the pod's host: the agent starts the shell, dials the new relay and answers
 * once its socket is there; the caller's WebSocket then joins the relay under the returned id. A
 * pod that is not running is a 400, a full session count on the host a 429, a host away a 503.
 */
export async function openTerminal({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; cols: number; rows: number }>): Promise<Result<{ relay: string }>> {
  const target = await podTarget(ctx, teamId, input.name, { running: true });
  if (!target.ok) return target;
  const relay = newRelayId(target.value.hostId);
  const opened = await callTarget(
    ctx,
    target.value,
    "pod.terminal.open",
    { name: input.name, relay, team: teamId, cols: input.cols, rows: input.rows },
    { timeoutMs: 20_000 },
  );
  return opened.ok ? ok({ relay }) : opened;
}
