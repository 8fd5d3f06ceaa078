import { and, desc, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { backupRestores, backups } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { countedBackups, findTeamBackup, planLimit, removeBackups } from "./records";
import { type BackupView, toBackupView } from "./views";

/** Listing, reading and deleting a pod's backups (docs/backups.md). */

export interface BackupList {
  backups: BackupView[];
  /** the plan's limit of backups kept */
  limit: number;
  /** backups that count against it (in progress or completed) */
  count: number;
}

/** `GET /api/pods/{name}/backups`: every backup of the pod, newest first, with the plan's limit. */
export async function listBackups({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<BackupList>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  // Bounded without paging: rows beyond the limit are pruned or refused, and failed rows are few
  // (a failed backup holds no bytes; they are listed so the reason is seen).
  const rows = await ctx.db
    .select()
    .from(backups)
    .where(eq(backups.podId, pod.id))
    .orderBy(desc(backups.createdAt), desc(backups.id))
    .limit(200);
  return ok({
    backups: rows.map((b) => toBackupView(b, pod.name)),
    limit: planLimit(pod),
    count: await countedBackups(ctx.db, pod.id),
  });
}

/** `GET /api/pods/{name}/backups/{id}` */
export async function getBackup({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<BackupView>> {
  const found = await findTeamBackup(ctx.db, teamId, input.name, input.id);
  return found.ok ? ok(toBackupView(found.value.backup, found.value.pod.name)) : found;
}

/**
 * `DELETE /api/pods/{name}/backups/{id}`: the row and its R2 object. 409 while it is in progress
 * (its workflow ends it; the sweep ends one that is stuck) or while a restore reads it.
 */
export async function deleteBackup({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<{ status: "deleted" }>> {
  const found = await findTeamBackup(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  const { backup } = found.value;
  if (backup.status === "in_progress")
    return fail("conflict", `backup ${backup.id} is in progress; delete it once it has ended`);
  const [restoring] = await ctx.db
    .select({ id: backupRestores.id })
    .from(backupRestores)
    .where(and(eq(backupRestores.backupId, backup.id), eq(backupRestores.status, "running")))
    .limit(1);
  if (restoring)
    return fail("conflict", `backup ${backup.id} is being restored; delete it once the restore has ended`);
  await removeBackups(ctx.env, ctx.db, [backup]);
  return ok({ status: "deleted" });
}
