import { and, eq, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type HostRow, hosts, type PodRow, pods } from "../../db/schema";
import { moveBegun } from "./moving";

export interface PodWithHost {
  pod: PodRow;
  host: HostRow | null;
  /** its move to another server has begun and not ended (./moving.ts): read in the same statement */
  moving: boolean;
}

const columns = { pod: pods, host: hosts, moving: moveBegun(pods.id).mapWith(Boolean) };

/**
 * The team's live pod by name. Another team's pod, a deleted pod and a missing pod are all the same
 * 404: whether a name exists elsewhere is not the caller's business.
 */
export async function findTeamPod(db: Db, teamId: string, name: string): Promise<Result<PodWithHost>> {
  const [row] = await db
    .select(columns)
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
      .select(columns)
      .from(pods)
      .leftJoin(hosts, eq(hosts.id, pods.hostId))
      .where(eq(pods.id, podId))
      .limit(1)
  )[0];
