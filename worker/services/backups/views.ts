import type { BackupRow, BackupStatus, BackupTrigger } from "../../db/schema";

/** A backup as the API shows it (contract: Backup), with its hash and its test-restore. */
export interface BackupView {
  id: string;
  pod_name: string;
  note: string | null;
  status: BackupStatus;
  /** bytes of the archive; null until it has been checked */
  size: number | null;
  trigger: BackupTrigger;
  /** why it failed; only on a failed backup */
  error?: string;
  /** hex SHA-256 of the archive; null until it has been checked */
  sha256: string | null;
  /** when a test-restore of the archive passed; null before (or when it failed: verify_error) */
  verified_at: string | null;
  verify_error: string | null;
  created_at: string;
  completed_at: string | null;
}

export const toBackupView = (b: BackupRow, podName: string): BackupView => ({
  id: b.id,
  pod_name: podName,
  note: b.note,
  status: b.status,
  size: b.size,
  trigger: b.trigger,
  ...(b.status === "failed" ? { error: b.error ?? "failed" } : {}),
  sha256: b.sha256,
  verified_at: b.verifiedAt,
  verify_error: b.verifyError,
  created_at: b.createdAt,
  completed_at: b.completedAt,
});
