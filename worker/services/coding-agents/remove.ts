import { eq } from "drizzle-orm";
import type { CodingAgentSlug } from "../../../shared/coding-agents";
import { fail, ok, type Result } from "../../../shared/errors";
import { podCodingAgents } from "../../db/schema";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { refuseWhileMoving } from "../pods/moving";
import { callTarget, NOT_RUNNING, targetOf } from "../pods/target";
import { findTeamCodingAgent } from "./lookup";

/** the host removes a package tree (hundreds of MB for some agents) from the pod's home */
const REMOVE_TIMEOUT_MS = 300_000;

/**
 * `DELETE /api/pods/{name}/agents/{slug}`: the host removes the package and its command from the
 * pod's npm prefix (`pod.coding-agents.remove`, synchronous, in the running pod), then the row goes
 * with an `agent_removed` event. What the agent's sign-in wrote in its own config directory stays
 * in the pod (the user's; the service never reads it). 404 when not installed, 409 while installing,
 * 400 when the pod is not running.
 */
export async function removeCodingAgent({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; slug: CodingAgentSlug }>): Promise<Result<{ status: "removed" }>> {
  const found = await findTeamCodingAgent(ctx.db, teamId, input.name, input.slug);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod, agent } = found.value;
  if (agent.status === "installing")
    return fail("conflict", `${agent.slug} is still installing; remove it once the install has ended`);
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const target = targetOf(found.value);
  if (!target.ok) return target;
  const removed = await callTarget(
    ctx,
    target.value,
    "pod.coding-agents.remove",
    { name: pod.name, agent: input.slug },
    // a fresh key per request (callHost's), as for a service's removal (../services/remove.ts)
    { timeoutMs: REMOVE_TIMEOUT_MS },
  );
  if (!removed.ok) return removed;
  await ctx.db.batch([
    ctx.db.delete(podCodingAgents).where(eq(podCodingAgents.id, agent.id)),
    recordEventStatement(ctx.db, pod.id, "agent_removed", `${agent.slug} removed from pod ${pod.name}`, {
      agent: agent.slug,
    }),
  ]);
  return ok({ status: "removed" as const });
}
