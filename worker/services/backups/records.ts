import { and, count, eq, inArray } from "drizzle-orm";
import { findPlan, PLANS } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type BackupRow, backupRestores, backups, type PodRow } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { alertOnBackupFailed } from "../alerts/hooks";
import { findTeamPod, type PodWithHost } from "../pods/lookup";

/** Backups' rows and objects (docs/backups.md): the one place that knows where bytes live. */

/** a backup's note, at most this many characters */
export const NOTE_MAX = 500;
/** a host-made archive is at most the largest plan's disk (it is compressed from that disk) */
export const ARCHIVE_MAX_BYTES = Math.max(...PLANS.map((p) => p.diskGb)) * 1024 ** 3;

export const objectKeyOf = (podId: string, backupId: string) => `backups/${podId}/${backupId}.tar.gz`;

/** The spec's "backups kept per pod" of the pod's plan. */
export const planLimit = (pod: Pick<PodRow, "planSlug">): number => findPlan(pod.planSlug)?.backupsKept ?? 1;

/** Backups that count against the limit: in progress (about to hold bytes) and completed; failed ones hold none. */
export async function countedBackups(db: Db, podId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(backups)
    .where(and(eq(backups.podId, podId), inArray(backups.status, ["in_progress", "completed"])));
  return row?.n ?? 0;
}

export const BUSY = (name: string) =>
  `a backup, import or restore of pod ${name} is running; one at a time per pod, try again when it has ended`;

/**
 * Whether a manual backup or a restore can run on the pod: a running pod is read and written live, a
 * stopped one in helper containers on its host and left stopped (docs/backups.md "A stopped pod").
 * Any other state (creating, error, suspended) and a pod on no host cannot.
 */
export const backupable = (pod: Pick<PodRow, "status" | "hostId">): boolean =>
  (pod.status === "running" || pod.status === "stopped") && Boolean(pod.hostId);

/** why `backupable` said no, for the 400 */
export const notBackupable = (pod: Pick<PodRow, "name" | "status" | "hostId">): string =>
  pod.hostId
    ? `pod ${pod.name} is ${pod.status}; backups and restores need a running or stopped pod`
    : `pod ${pod.name} is on no host yet`;

/** Whether a backup (or import) or a restore of the pod is running: they go one at a time. */
export async function busyWith(db: Db, podId: string): Promise<boolean> {
  const [backup] = await db
    .select({ id: backups.id })
    .from(backups)
    .where(and(eq(backups.podId, podId), eq(backups.status, "in_progress")))
    .limit(1);
  if (backup) return true;
  const [restore] = await db
    .select({ id: backupRestores.id })
    .from(backupRestores)
    .where(and(eq(backupRestores.podId, podId), eq(backupRestores.status, "running")))
    .limit(1);
  return Boolean(restore);
}

/** The team's pod's backup; another team's pod, an unknown id and another pod's backup are one 404. */
export async function findTeamBackup(
  db: Db,
  teamId: string,
  name: string,
  id: string,
): Promise<Result<PodWithHost & { backup: BackupRow }>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const [backup] = await db
    .select()
    .from(backups)
    .where(and(eq(backups.id, id), eq(backups.podId, found.value.pod.id)));
  return backup ? ok({ ...found.value, backup }) : fail("not_found", `backup ${id} not found`);
}

/**
 * A backup ends `failed` with `reason` and its object is deleted: a failed backup holds no bytes
 * (never an orphan in R2). `from` says which states may fail (a completed backup found corrupted
 * fails too); a row already past them is left alone. Returns whether the row moved.
 */
export async function failBackup(
  env: Bindings,
  db: Db,
  id: string,
  reason: string,
  opts: { from?: BackupRow["status"][]; verifyError?: string } = {},
): Promise<boolean> {
  const [row] = await db
    .update(backups)
    .set({
      status: "failed",
      error: reason.slice(0, 2000),
      completedAt: nowIso(),
      ...(opts.verifyError ? { verifyError: opts.verifyError.slice(0, 2000) } : {}),
    })
    .where(and(eq(backups.id, id), inArray(backups.status, opts.from ?? ["in_progress"])))
    .returning({ objectKey: backups.objectKey, podId: backups.podId });
  if (row) {
    await env.BLOBS.delete(row.objectKey);
    await alertOnBackupFailed(env, db, row.podId, reason.slice(0, 300));
  }
  return Boolean(row);
}

/** Rows and objects removed together (objects first: a row never points at bytes that are gone unnoticed). */
export async function removeBackups(env: Bindings, db: Db, rows: Pick<BackupRow, "id" | "objectKey">[]) {
  for (let i = 0; i < rows.length; i += 500) {
    const page = rows.slice(i, i + 500);
    await env.BLOBS.delete(page.map((r) => r.objectKey));
    await db.delete(backups).where(
      inArray(
        backups.id,
        page.map((r) => r.id),
      ),
    );
  }
}
