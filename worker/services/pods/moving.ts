import { type SQLWrapper, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";

/**
 * A pod whose move to another server has begun refuses changes until the move ends (409): its home
 * is being copied from the old host, which also keeps what lives beside the home (a deploy's release
 * record, services, a coding agent, the vhost's domains and widget, the pod's SSH keys, its runtime
 * settings). A change made there in that window would arrive on the new host half, or not at all
 * (docs/hosts.md "During a move"). Reads, exec, file operations, backups and the pod's delete stay
 * open: files written before the pod stops for the cut-over go across with the final sync.
 */
export const MOVING = (name: string) =>
  `pod ${name} is being moved to another server; try again once the move has ended (its events say when)`;

/**
 * Whether the pod's move has begun and not ended, as an SQL expression on its id (read with the pod
 * by ./lookup.ts, alone by `podMoving`). The IN repeats pod_moves_one_open_idx's own condition, so
 * SQLite searches that partial index instead of scanning the table.
 */
export const moveBegun = (podId: SQLWrapper | string) =>
  sql<boolean>`EXISTS (SELECT 1 FROM pod_moves m WHERE m.pod_id = ${podId}
    AND m.status IN ('queued', 'moving') AND m.status = 'moving')`;

/** Whether the pod's move has begun and not ended. */
export async function podMoving(db: Db, podId: string): Promise<boolean> {
  const row = await db.get<{ n: number } | undefined>(sql`SELECT ${moveBegun(podId)} AS n`);
  return Boolean(row?.n);
}

/** 409 for a pod whose move has begun (`moving` is read with the pod: ./lookup.ts). */
export const refuseWhileMoving = (found: { pod: { name: string }; moving: boolean }): Result<null> =>
  found.moving ? fail("conflict", MOVING(found.pod.name)) : ok(null);

/**
 * What the pod is still doing on its host that a move must not cut in half: a deploy, a restore, a
 * database service or a coding agent installing. An evacuation waits for it before it copies the
 * pod (none can start once the move is `moving`: the verbs above refuse, and a queued deploy waits
 * its turn, ../git/queue.ts). `null` when there is none.
 */
export async function podBusyWith(db: Db, podId: string): Promise<string | null> {
  const row = await db.get<{ what: string } | undefined>(
    sql`SELECT 'a deploy' AS what FROM deployments WHERE pod_id = ${podId} AND stage = 'running'
        UNION ALL SELECT 'a restore' FROM backup_restores WHERE pod_id = ${podId} AND status = 'running'
        UNION ALL SELECT 'a database service install' FROM pod_services WHERE pod_id = ${podId} AND status = 'installing'
        UNION ALL SELECT 'a coding agent install' FROM pod_coding_agents WHERE pod_id = ${podId} AND status = 'installing'
        LIMIT 1`,
  );
  return row?.what ?? null;
}
