import { and, desc, eq, isNull } from "drizzle-orm";
import type { Result } from "../../../shared/errors";
import type { BackupChecked, BackupMade } from "../../../shared/protocol/backups";
import type { Db } from "../../db/client";
import { type BackupTrigger, backupSchedules, backups, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { alertOnBackupCompleted } from "../alerts/hooks";
import { backupable, failBackup, notBackupable, planLimit, removeBackups } from "./records";

/** The steps of a backup's workflow (worker/workflows/pod-backup.ts), each a plain function of D1 and R2. */

type Preset = "static" | "php" | "nodejs" | "python";

/** A step's outcome as the workflow stores it: plain data (a step's output is serialized). */
export type Facts = { ok: true; bytes: number; sha256: string } | { ok: false; reason: string };
export type Done = { ok: true } | { ok: false; reason: string };
const no = (reason: string) => ({ ok: false as const, reason });

export type BackupJob =
  | {
      kind: "run";
      trigger: BackupTrigger;
      podId: string;
      podName: string;
      preset: Preset;
      hostId: string;
      /** what the host does if it finds the pod stopped (`backup.create`'s `whenStopped`) */
      whenStopped: "refuse" | "helper";
    }
  | { kind: "over" }
  | { kind: "fail"; reason: string };

/**
 * What the workflow needs, read once; a backup no longer in progress (swept, pod deleted) is over.
 * A manual backup takes a running or a stopped pod (a stopped one is backed up in helper containers
 * on its host and left stopped); a scheduled one only a running pod, as the spec says stopped pods
 * are skipped (also when one was stopped after its backup was started: it fails, saying so).
 */
export async function loadBackupJob(db: Db, backupId: string): Promise<BackupJob> {
  const [row] = await db
    .select({ backup: backups, pod: pods })
    .from(backups)
    .innerJoin(pods, eq(pods.id, backups.podId))
    .where(eq(backups.id, backupId));
  if (row?.backup.status !== "in_progress") return { kind: "over" };
  const { backup, pod } = row;
  if (!pod.hostId) return { kind: "fail", reason: `pod ${pod.name} is on no host` };
  // an import needs only the host (a test-restore needs no pod)
  const manual = backup.trigger === "manual";
  if (backup.trigger !== "import" && !(manual ? backupable(pod) : pod.status === "running"))
    return {
      kind: "fail",
      reason: manual ? notBackupable(pod) : `pod ${pod.name} is ${pod.status}, not running`,
    };
  return {
    kind: "run",
    trigger: backup.trigger,
    podId: pod.id,
    podName: pod.name,
    preset: pod.preset as Preset,
    hostId: pod.hostId,
    whenStopped: manual ? "helper" : "refuse",
  };
}

/**
 * After `backup.create`: the archive counts only when the host says it is whole AND what the byte
 * route stored is the same archive: the object's size (R2's own count), the bytes and hash the route
 * counted on the way in, and the host's claim all agree. Then size and hash are the record's; any
 * difference fails the backup and deletes the object. Returns the record's facts for the test-restore.
 */
export async function checkUpload(
  env: Bindings,
  db: Db,
  backupId: string,
  made: Result<BackupMade>,
): Promise<Facts> {
  const refuse = async (reason: string) => {
    await failBackup(env, db, backupId, reason);
    return no(reason);
  };
  if (!made.ok) return refuse(`the host did not make the archive: ${made.message}`);
  if (!made.value.ok) return refuse(made.value.reason);
  const claim = made.value;
  const [row] = await db.select().from(backups).where(eq(backups.id, backupId));
  if (row?.status !== "in_progress") return no(`backup ${backupId} is no longer in progress`);
  const object = await env.BLOBS.head(row.objectKey);
  if (!object || row.uploadedBytes === null || row.uploadedSha256 === null)
    return refuse("the host reported an archive but none was uploaded");
  if (object.size !== claim.bytes || row.uploadedBytes !== claim.bytes)
    return refuse(
      `size mismatch: the host made ${claim.bytes} bytes, ${row.uploadedBytes} were uploaded and ${object.size} stored`,
    );
  if (row.uploadedSha256 !== claim.sha256)
    return refuse(`SHA-256 mismatch: the host made ${claim.sha256}, the upload was ${row.uploadedSha256}`);
  // size and hash become the record: from here a late upload for this id is refused (the route
  // takes bytes only while sha256 is unset)
  const [checked] = await db
    .update(backups)
    .set({ size: claim.bytes, sha256: claim.sha256 })
    .where(and(eq(backups.id, backupId), eq(backups.status, "in_progress"), isNull(backups.sha256)))
    .returning();
  if (!checked) return no(`backup ${backupId} is no longer in progress`);
  return { ok: true, bytes: claim.bytes, sha256: claim.sha256 };
}

/** The facts an import was recorded with (counted as it was uploaded), for its test-restore. */
export async function recordedFacts(db: Db, backupId: string): Promise<Facts> {
  const [row] = await db.select().from(backups).where(eq(backups.id, backupId));
  if (row?.status !== "in_progress") return no(`backup ${backupId} is no longer in progress`);
  if (row.size === null || row.sha256 === null || row.size <= 0)
    return no("the archive was never recorded whole");
  return { ok: true, bytes: row.size, sha256: row.sha256 };
}

/**
 * After `backup.verify` (a test-restore on the host): passed → `completed` with `verified_at`;
 * failed → `failed` with the reason in `error` and `verify_error`, the object deleted. A backup that
 * cannot be restored is never shown as good.
 */
export async function recordVerified(
  env: Bindings,
  db: Db,
  backupId: string,
  checked: Result<BackupChecked>,
): Promise<Done> {
  const reason = !checked.ok
    ? `the test-restore did not run: ${checked.message}`
    : !checked.value.ok
      ? checked.value.reason
      : undefined;
  if (reason !== undefined) {
    await failBackup(env, db, backupId, `the test-restore failed: ${reason}`, { verifyError: reason });
    return no(reason);
  }
  const now = nowIso();
  const [done] = await db
    .update(backups)
    .set({ status: "completed", verifiedAt: now, completedAt: now })
    .where(and(eq(backups.id, backupId), eq(backups.status, "in_progress")))
    .returning({ id: backups.id, podId: backups.podId });
  if (done) await alertOnBackupCompleted(env, db, done.podId);
  return done ? { ok: true } : no(`backup ${backupId} is no longer in progress`);
}

/**
 * After a scheduled backup completed: the pod keeps its schedule's retention (at most the plan's
 * limit) of completed backups; the oldest beyond it are deleted, objects and rows. Returns how many.
 */
export async function pruneBeyondRetention(env: Bindings, db: Db, podId: string): Promise<number> {
  const [row] = await db
    .select({ pod: pods, schedule: backupSchedules })
    .from(pods)
    .leftJoin(backupSchedules, eq(backupSchedules.podId, pods.id))
    .where(eq(pods.id, podId));
  if (!row) return 0;
  const limit = planLimit(row.pod);
  const keep = Math.min(row.schedule?.retention ?? limit, limit);
  const beyond = await db
    .select({ id: backups.id, objectKey: backups.objectKey })
    .from(backups)
    .where(and(eq(backups.podId, podId), eq(backups.status, "completed")))
    .orderBy(desc(backups.createdAt), desc(backups.id))
    .limit(1000)
    .offset(keep);
  await removeBackups(env, db, beyond);
  return beyond.length;
}
