import { failBackup } from "../../services/backups/records";
import { endMove, releasePlacement, switchBack } from "../../services/hosts/move-job";
import { runOnHost } from "../host-step";
import { dbOf, type MoveRun, POWER_TIMEOUT_MS, type Progress } from "./run";

/** Puts back what a failed move did, then ends it with the reason. */
export async function undoMove(run: MoveRun, progress: Progress, why: string) {
  const { step, env, ref, job } = run;
  let reason = why;
  const placed = progress.placed;
  // An evacuated pod is still whole on its old host: it goes back there. A lost host's pod stays
  // on the new host, with what it got (there is nowhere else), and the reason says what is missing.
  const goBack = job.move === "evacuate" || !progress.switched;
  if (placed && goBack) {
    if (progress.createdNew) {
      const removed = await runOnHost(step, env, ref, {
        name: "undo: remove the copy on the new host",
        hostId: placed.hostId,
        op: "pod.delete",
        params: { name: job.podName },
        timeoutMs: POWER_TIMEOUT_MS,
      });
      if (!removed.ok)
        reason += `; the copy on server ${placed.hostName} was not removed: ${removed.message}`;
    }
    await step.do("undo: give the new host's room back", async () => {
      if (progress.switched) await switchBack(dbOf(run), job, placed.hostId);
      else await releasePlacement(dbOf(run), job, placed.hostId);
      return true;
    });
  }
  if (job.move === "evacuate" && progress.stoppedOld) {
    const started = await runOnHost(step, env, ref, {
      name: "undo: start on the old host",
      hostId: job.fromHostId,
      op: "pod.start",
      params: { name: job.podName },
      timeoutMs: POWER_TIMEOUT_MS,
    });
    if (!started.ok) reason += `; it did not start again on server ${job.fromHostName}: ${started.message}`;
  }
  const backupId = progress.backupId;
  const final = reason;
  await step.do("record the failure", async () => {
    if (backupId) await failBackup(env, dbOf(run), backupId, `the move failed: ${final}`);
    await endMove(dbOf(run), job.moveId, job.podId, { ok: false, reason: final });
    return true;
  });
}
