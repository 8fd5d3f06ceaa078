import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { reasonOf } from "../../shared/errors";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import {
  checkUpload,
  type Facts,
  loadBackupJob,
  pruneBeyondRetention,
  recordedFacts,
  recordVerified,
} from "../services/backups/job";
import { failBackup } from "../services/backups/records";
import { runOnHost, type WorkflowRef } from "./host-step";

export interface PodBackupParams {
  backupId: string;
  podId: string;
}

/** dump the databases and stream the archive (a pod's disk is at most tens of GB) */
export const CREATE_TIMEOUT_MS = 60 * 60_000;
/** read the archive back, list it, load every dump into a scratch server */
export const VERIFY_TIMEOUT_MS = 30 * 60_000;

/**
 * One backup (manual, scheduled or import; docs/backups.md), instance id = the backup's id:
 * 1. the job read from D1 (a backup no longer in progress is over);
 * 2. for a manual or scheduled one, `backup.create` on the pod's host through `runOnHost`: the host
 *    streams the archive to `PUT /agent/backups/{id}` as it makes it; then the upload is checked
 *    against the host's claim (services/backups/job.ts checkUpload) and size and hash recorded;
 *    an import was counted and hashed as it was uploaded;
 * 3. `backup.verify` on the host, a test-restore: passed → `completed` with `verified_at`, failed →
 *    `failed` with the reason and the object deleted. Every backup is verified (docs: the cost);
 * 4. a scheduled one then keeps the schedule's retention (the oldest beyond it deleted).
 * Every instance ends its backup: completed, or failed with the reason and no object. An instance
 * that never ends (killed with its host) is ended by the cron sweep (services/backups/sweep.ts).
 */
export class PodBackupWorkflow extends WorkflowEntrypoint<Bindings, PodBackupParams> {
  override async run(event: Readonly<WorkflowEvent<PodBackupParams>>, step: WorkflowStep) {
    const { backupId } = event.payload;
    const ref: WorkflowRef = { workflow: "POD_BACKUP", instanceId: event.instanceId };
    const db = () => createDb(this.env.DB);
    try {
      const job = await step.do("read the backup", async () => loadBackupJob(db(), backupId));
      if (job.kind === "over") return { status: "over" };
      if (job.kind === "fail") {
        await step.do("record the failure", async () => failBackup(this.env, db(), backupId, job.reason));
        return { status: "failed", reason: job.reason };
      }
      let facts: Facts;
      if (job.trigger === "import") {
        facts = await step.do("read the import", async () => recordedFacts(db(), backupId));
      } else {
        const made = await runOnHost(step, this.env, ref, {
          name: "make the archive",
          hostId: job.hostId,
          op: "backup.create",
          params: { name: job.podName, backupId, preset: job.preset, whenStopped: job.whenStopped },
          timeoutMs: CREATE_TIMEOUT_MS,
        });
        facts = await step.do("check the upload", async () => checkUpload(this.env, db(), backupId, made));
      }
      if (!facts.ok) {
        const { reason } = facts;
        await step.do("record why", async () => failBackup(this.env, db(), backupId, reason));
        return { status: "failed", reason };
      }
      const checked = await runOnHost(step, this.env, ref, {
        name: "test-restore",
        hostId: job.hostId,
        op: "backup.verify",
        params: { backupId, bytes: facts.bytes, sha256: facts.sha256 },
        timeoutMs: VERIFY_TIMEOUT_MS,
      });
      const verified = await step.do("record the test-restore", async () =>
        recordVerified(this.env, db(), backupId, checked),
      );
      if (!verified.ok) return { status: "failed", reason: verified.reason };
      if (job.trigger === "scheduled")
        await step.do("keep the schedule's retention", async () =>
          pruneBeyondRetention(this.env, db(), job.podId),
        );
      return { status: "completed" };
    } catch (error) {
      const message = reasonOf(error, "the backup's workflow stopped without a reason (control plane)");
      await step.do("record the error", async () => failBackup(this.env, db(), backupId, message));
      return { status: "failed", reason: message };
    }
  }
}
