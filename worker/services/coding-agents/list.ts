import { asc, eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { podCodingAgents } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { type CodingAgentView, toCodingAgentView } from "./views";

/** `GET /api/pods/{name}/agents`: the pod's agents, oldest first; `[]` when none. */
export async function listCodingAgents({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<{ agents: CodingAgentView[] }>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const rows = await ctx.db
    .select()
    .from(podCodingAgents)
    .where(eq(podCodingAgents.podId, found.value.pod.id))
    .orderBy(asc(podCodingAgents.createdAt), asc(podCodingAgents.slug));
  return ok({ agents: rows.map(toCodingAgentView) });
}
