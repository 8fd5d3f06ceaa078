import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Backups (docs/backups.md). A row per archive; its bytes are one R2 object (`object_key`). The
 * archive's size and hash are recorded twice on purpose: `uploaded_*` is what the byte route counted
 * as the host (or the importer) sent it, `size`/`sha256` what was checked against the host's own
 * claim; a backup is `completed` only once both agree and a test-restore passed (`verified_at`).
 */
export const BACKUP_STATUSES = ["in_progress", "completed", "failed"] as const;
export type BackupStatus = (typeof BACKUP_STATUSES)[number];
export const BACKUP_TRIGGERS = ["manual", "scheduled", "import"] as const;
export type BackupTrigger = (typeof BACKUP_TRIGGERS)[number];

export const backups = sqliteTable(
  "backups",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    note: text("note"),
    status: text("status", { enum: BACKUP_STATUSES }).notNull(),
    trigger: text("trigger", { enum: BACKUP_TRIGGERS }).notNull(),
    /** bytes of the archive once checked; null before */
    size: integer("size"),
    /** hex SHA-256 of the archive once checked; null before */
    sha256: text("sha256"),
    objectKey: text("object_key").notNull(),
    /** what the byte route stored last (a retried upload replaces it) */
    uploadedBytes: integer("uploaded_bytes"),
    uploadedSha256: text("uploaded_sha256"),
    error: text("error"),
    verifiedAt: text("verified_at"),
    verifyError: text("verify_error"),
    createdAt: text("created_at").notNull(),
    completedAt: text("completed_at"),
  },
  (t) => [
    index("backups_pod_created_idx").on(t.podId, t.createdAt),
    index("backups_status_created_idx").on(t.status, t.createdAt),
    // one backup (or import) in progress per pod: a second start loses the insert, never runs twice
    uniqueIndex("backups_one_in_progress_idx").on(t.podId).where(sql`status = 'in_progress'`),
  ],
);
export type BackupRow = typeof backups.$inferSelect;

export const BACKUP_FREQUENCIES = ["daily", "weekly"] as const;
export type BackupFrequency = (typeof BACKUP_FREQUENCIES)[number];

/** A pod's schedule; no row means the default (enabled, daily, the plan's retention). */
export const backupSchedules = sqliteTable(
  "backup_schedules",
  {
    podId: text("pod_id").primaryKey(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    frequency: text("frequency", { enum: BACKUP_FREQUENCIES }).notNull(),
    /** null: the plan's limit (follows a plan change) */
    retention: integer("retention"),
    /** when the cron next takes the pod; null: due now */
    nextRunAt: text("next_run_at"),
    lastRunAt: text("last_run_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("backup_schedules_next_run_idx").on(t.enabled, t.nextRunAt)],
);
export type BackupScheduleRow = typeof backupSchedules.$inferSelect;

export const RESTORE_STATUSES = ["running", "completed", "failed"] as const;

/** Restores of a pod from one of its backups: what is running (one at a time) and how each ended. */
export const backupRestores = sqliteTable(
  "backup_restores",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    backupId: text("backup_id").notNull(),
    status: text("status", { enum: RESTORE_STATUSES }).notNull(),
    error: text("error"),
    dumpPath: text("dump_path"),
    createdAt: text("created_at").notNull(),
    finishedAt: text("finished_at"),
  },
  (t) => [
    index("backup_restores_status_created_idx").on(t.status, t.createdAt),
    uniqueIndex("backup_restores_one_running_idx").on(t.podId).where(sql`status = 'running'`),
  ],
);
export type BackupRestoreRow = typeof backupRestores.$inferSelect;
