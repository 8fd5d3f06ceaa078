import { z } from "@hono/zod-openapi";
import { BACKUP_FREQUENCIES, BACKUP_STATUSES, BACKUP_TRIGGERS } from "../../db/schema";
import { NOTE_MAX } from "../../services/backups/records";

/** Schemas the backup routes share (docs/backups.md). */

export const tags = ["Backups"];

export const BackupIdParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" } }),
});

export const Note = z.string().max(NOTE_MAX).openapi({ example: "before the upgrade" });

export const Backup = z
  .object({
    id: z.string().openapi({ example: "bk_3k9x0q2m5v7b1c4d6f8g" }),
    pod_name: z.string(),
    note: z.string().nullable(),
    status: z.enum(BACKUP_STATUSES),
    size: z.number().int().nullable().openapi({ description: "bytes of the archive; null until checked" }),
    trigger: z.enum(BACKUP_TRIGGERS),
    error: z.string().optional().openapi({ description: "why it failed; only on a failed backup" }),
    sha256: z.string().nullable().openapi({ description: "hex SHA-256 of the archive; null until checked" }),
    verified_at: z.string().nullable().openapi({
      description: "when a test-restore of the archive passed; a backup is completed only after one",
    }),
    verify_error: z.string().nullable().openapi({ description: "why the test-restore failed" }),
    created_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .openapi("Backup");

export const BackupList = z
  .object({
    backups: z.array(Backup),
    limit: z.number().int().openapi({ description: "backups the pod's plan keeps" }),
    count: z
      .number()
      .int()
      .openapi({ description: "backups counting against it (in progress or completed)" }),
  })
  .openapi("BackupList");

export const BackupSchedule = z
  .object({
    enabled: z.boolean(),
    frequency: z.enum(BACKUP_FREQUENCIES),
    retention: z.number().int().openapi({ description: "completed backups kept; at most the plan's limit" }),
    next_run_at: z
      .string()
      .nullable()
      .openapi({ description: "when the next scheduled backup is due; null when disabled" }),
  })
  .openapi("BackupSchedule");
