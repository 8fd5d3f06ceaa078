import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { backupRestores } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { billingAdmission } from "../billing/admission";
import type { TeamCall } from "../context";
import { refuseWhileMoving } from "../pods/moving";
import { isUniqueViolation } from "../teams/slug";
import { BUSY, backupable, busyWith, findTeamBackup, notBackupable } from "./records";

/**
 * `POST /api/pods/{name}/backups/{id}/restore`: 202 `{status: "restoring", backup_id}`; the restore
 * runs in the pod-restore workflow, which reports `restore_started`, then `restore_completed` or
 * `restore_failed` as pod events. A completed backup of a running or stopped pod (a stopped one is
 * restored in helper containers and left stopped); one backup, import or restore of a pod at a time
 * (409). A `restoring` row is the lock (a unique index per pod). A team that is not payable
 * (services/billing/admission.ts) is refused with 402.
 */
export async function restoreBackup({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<{ status: "restoring"; backup_id: string }>> {
  const found = await findTeamBackup(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod, backup } = found.value;
  if (backup.status !== "completed")
    return fail(
      "conflict",
      `backup ${backup.id} is ${backup.status}; only a completed backup can be restored`,
    );
  if (!backupable(pod)) return fail("bad_request", notBackupable(pod));
  const payable = await billingAdmission(ctx, teamId, "restoring backups");
  if (!payable.ok) return payable;
  if (await busyWith(ctx.db, pod.id)) return fail("conflict", BUSY(pod.name));
  const id = newId("rst");
  try {
    await ctx.db
      .insert(backupRestores)
      .values({ id, podId: pod.id, backupId: backup.id, status: "running", createdAt: nowIso() });
  } catch (error) {
    if (isUniqueViolation(error, "backup_restores.pod_id")) return fail("conflict", BUSY(pod.name));
    throw error;
  }
  try {
    await ctx.env.POD_RESTORE.create({ id, params: { restoreId: id } });
  } catch (error) {
    const reason = `the restore could not be started: ${error instanceof Error ? error.message : String(error)}`;
    await ctx.db
      .update(backupRestores)
      .set({ status: "failed", error: reason, finishedAt: nowIso() })
      .where(eq(backupRestores.id, id));
    return fail("unavailable", reason);
  }
  return ok({ status: "restoring", backup_id: backup.id });
}
