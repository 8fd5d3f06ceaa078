import { and, eq, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type HostRow, hosts, type PodRow, pods } from "../../db/schema";

export interface PodWithHost {
  pod: PodRow;
  host: HostRow | null;
}

/**
 * The team's live pod by name. Another team's pod, a deleted pod and a missing pod are all the same
 * 404: whether a name exists elsewhere is not the caller's business.
 */
export async function findTeamPod(db: Db, teamId: string, name: string): Promise<Result<PodWithHost>> {
  const [row] = await db
    .select({ pod: pods, host: hosts })
    .from(pods)
    .leftJoin(hosts, eq(hosts.id, pods.hostId))
    .where(and(eq(pods.name, name), eq(pods.teamId, teamId), ne(pods.status, "deleted")))
    .limit(1);
  return row ? ok(row) : fail("not_found", `pod ${name} not found`);
}

/** The pod's row (and its host's) read again by id, e.g. after a host command changed it; not a reload of its app. */
export const readPodRow = async (db: Db, podId: string) =>
  (
    await db
      .select({ pod: pods, host: hosts })
      .from(pods)
      .leftJoin(hosts, eq(hosts.id, pods.hostId))
      .where(eq(pods.id, podId))
      .limit(1)
  )[0];
