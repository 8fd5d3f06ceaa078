import { and, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type PodCodingAgentRow, podCodingAgents } from "../../db/schema";
import { findTeamPod, type PodWithHost } from "../pods/lookup";

/** The pod's record of agent `slug`, if any (any status). */
export const codingAgentRowOf = async (db: Db, podId: string, slug: string) =>
  (
    await db
      .select()
      .from(podCodingAgents)
      .where(and(eq(podCodingAgents.podId, podId), eq(podCodingAgents.slug, slug)))
      .limit(1)
  )[0];

/** The team's pod and its agent `slug`: another team's pod, and an agent not installed, are 404. */
export async function findTeamCodingAgent(
  db: Db,
  teamId: string,
  name: string,
  slug: string,
): Promise<Result<PodWithHost & { agent: PodCodingAgentRow }>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const agent = await codingAgentRowOf(db, found.value.pod.id, slug);
  return agent ? ok({ ...found.value, agent }) : fail("not_found", `${slug} is not installed on pod ${name}`);
}
