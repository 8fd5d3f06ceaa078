import { and, asc, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type DomainRow, domains } from "../../db/schema";
import { findTeamPod, type PodWithHost } from "../pods/lookup";

/** The pod's domains, oldest first. */
export const domainsOfPod = (db: Db, podId: string) =>
  db
    .select()
    .from(domains)
    .where(eq(domains.podId, podId))
    .orderBy(asc(domains.createdAt), asc(domains.domain));

/**
 * The team's pod and its domain `id`: another team's pod is the same 404 as a missing one
 * (findTeamPod), and so is a domain that is not the pod's.
 */
export async function findTeamDomain(
  db: Db,
  teamId: string,
  name: string,
  id: string,
): Promise<Result<PodWithHost & { domain: DomainRow }>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const [domain] = await db
    .select()
    .from(domains)
    .where(and(eq(domains.id, id), eq(domains.podId, found.value.pod.id)))
    .limit(1);
  return domain ? ok({ ...found.value, domain }) : fail("not_found", `pod ${name} has no domain ${id}`);
}
