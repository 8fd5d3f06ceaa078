import { and, eq } from "drizzle-orm";
import type { Result } from "../../../shared/errors";
import type { RestoreOutcome } from "../../../shared/protocol/backups";
import type { Db } from "../../db/client";
import { backupRestores, backups, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "../pods/events";
import { backupable, notBackupable } from "./records";

/** The steps of a restore's workflow (worker/workflows/pod-restore.ts). */

type Preset = "static" | "php" | "nodejs" | "python";

export type RestoreJob =
  | {
      kind: "run";
      podId: string;
      podName: string;
      preset: Preset;
      hostId: string;
      backupId: string;
      bytes: number;
      sha256: string;
    }
  | { kind: "over" }
  | { kind: "fail"; podId: string; backupId: string; reason: string };

/** What the restore needs, read once: the backup must still be completed, the pod running or stopped. */
export async function loadRestoreJob(db: Db, restoreId: string): Promise<RestoreJob> {
  const [row] = await db
    .select({ restore: backupRestores, pod: pods, backup: backups })
    .from(backupRestores)
    .innerJoin(pods, eq(pods.id, backupRestores.podId))
    .leftJoin(backups, eq(backups.id, backupRestores.backupId))
    .where(eq(backupRestores.id, restoreId));
  if (row?.restore.status !== "running") return { kind: "over" };
  const { pod, backup, restore } = row;
  const failed = (reason: string) => ({
    kind: "fail" as const,
    podId: pod.id,
    backupId: restore.backupId,
    reason,
  });
  if (backup?.status !== "completed" || backup.size === null || backup.sha256 === null)
    return failed(`backup ${restore.backupId} is no longer a completed backup`);
  if (!backupable(pod) || !pod.hostId) return failed(notBackupable(pod));
  return {
    kind: "run",
    podId: pod.id,
    podName: pod.name,
    preset: pod.preset as Preset,
    hostId: pod.hostId,
    backupId: backup.id,
    bytes: backup.size,
    sha256: backup.sha256,
  };
}

export const recordRestoreStarted = (db: Db, job: Extract<RestoreJob, { kind: "run" }>) =>
  recordEventStatement(db, job.podId, "restore_started", `restoring backup ${job.backupId}`, {
    backup_id: job.backupId,
  });

/**
 * The restore's end as the pod's event and the restore's row: `restore_completed` (databases
 * re-imported, dependency directories dropped: reload the pod) or `restore_failed` with the reason
 * and the dump file left inside the pod. Only a restore still running ends (once).
 */
export async function recordRestoreOutcome(
  db: Db,
  restoreId: string,
  target: { podId: string; backupId: string },
  outcome: Result<RestoreOutcome>,
): Promise<void> {
  const result: RestoreOutcome = outcome.ok
    ? outcome.value
    : { ok: false, reason: outcome.message, dump_path: null, files_restored: false };
  const now = nowIso();
  const [ended] = await db
    .update(backupRestores)
    .set(
      result.ok
        ? { status: "completed", finishedAt: now }
        : {
            status: "failed",
            error: result.reason.slice(0, 2000),
            dumpPath: result.dump_path,
            finishedAt: now,
          },
    )
    .where(and(eq(backupRestores.id, restoreId), eq(backupRestores.status, "running")))
    .returning({ id: backupRestores.id });
  if (!ended) return;
  if (result.ok) {
    const reload =
      result.dependencies_dropped.length > 0
        ? `; ${result.dependencies_dropped.join(", ")} not restored: reload the pod`
        : "";
    await recordEventStatement(
      db,
      target.podId,
      "restore_completed",
      `backup ${target.backupId} restored (${result.databases.length} database(s) re-imported)${reload}`,
      {
        backup_id: target.backupId,
        databases: result.databases.map((d) => ({ kind: d.kind, file: d.file })),
        dependencies_dropped: result.dependencies_dropped,
        reload_needed: result.dependencies_dropped.length > 0,
      },
    );
    return;
  }
  const left = result.dump_path ? `; the dump is left in the pod at ${result.dump_path}` : "";
  await recordEventStatement(
    db,
    target.podId,
    "restore_failed",
    `restoring backup ${target.backupId} failed: ${result.reason}${left}`,
    {
      backup_id: target.backupId,
      reason: result.reason,
      dump_path: result.dump_path,
      files_restored: result.files_restored,
    },
  );
}
