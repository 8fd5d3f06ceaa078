import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { fail, reasonOf } from "../../shared/errors";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { loadRestoreJob, recordRestoreOutcome, recordRestoreStarted } from "../services/backups/restore-job";
import { runOnHost, type WorkflowRef } from "./host-step";

export interface PodRestoreParams {
  restoreId: string;
}

/** read the archive back, replace ~/app, re-import every dump, start the services again */
export const RESTORE_TIMEOUT_MS = 60 * 60_000;

/**
 * One restore of a pod from one of its backups (docs/backups.md), instance id = the restore's id:
 * `restore_started`, `backup.restore` on the pod's host through `runOnHost` (with the record's bytes
 * and hash: the host checks the archive before touching the pod), then `restore_completed` or
 * `restore_failed` naming the dump left in the pod. Every instance ends its restore.
 */
export class PodRestoreWorkflow extends WorkflowEntrypoint<Bindings, PodRestoreParams> {
  override async run(event: Readonly<WorkflowEvent<PodRestoreParams>>, step: WorkflowStep) {
    const { restoreId } = event.payload;
    const ref: WorkflowRef = { workflow: "POD_RESTORE", instanceId: event.instanceId };
    const db = () => createDb(this.env.DB);
    const job = await step.do("read the restore", async () => loadRestoreJob(db(), restoreId));
    if (job.kind === "over") return { status: "over" };
    if (job.kind === "fail") {
      await step.do("record the failure", async () => {
        await recordRestoreOutcome(db(), restoreId, job, fail("conflict", job.reason));
        return true;
      });
      return { status: "failed", reason: job.reason };
    }
    try {
      await step.do("record the start", async () => {
        await recordRestoreStarted(db(), job);
        return true;
      });
      const outcome = await runOnHost(step, this.env, ref, {
        name: "restore on host",
        hostId: job.hostId,
        op: "backup.restore",
        params: {
          name: job.podName,
          preset: job.preset,
          backupId: job.backupId,
          bytes: job.bytes,
          sha256: job.sha256,
        },
        timeoutMs: RESTORE_TIMEOUT_MS,
      });
      await step.do("record the outcome", async () => {
        await recordRestoreOutcome(db(), restoreId, job, outcome);
        return true;
      });
      return outcome.ok && outcome.value.ok ? { status: "completed" } : { status: "failed" };
    } catch (error) {
      const message = reasonOf(error, "the restore's workflow stopped without a reason (control plane)");
      await step.do("record the error", async () => {
        await recordRestoreOutcome(db(), restoreId, job, fail("internal", message));
        return true;
      });
      return { status: "failed", reason: message };
    }
  }
}
