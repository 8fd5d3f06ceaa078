import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { fail, ok, type Result, reasonOf } from "../../../shared/errors";
import { createDb } from "../../db/client";
import type { Bindings } from "../../env";
import { forgetCachedReads } from "../../lib/isolate-cache";
import {
  endMove,
  loadMoveJob,
  type MoveJob,
  markMoveBackupRestored,
  moveOrigin,
  moveSpec,
  placeMove,
  switchPodHost,
  vhostExtras,
} from "../../services/hosts/move-job";
import { resolveLostHostAlerts, startNextMove } from "../../services/hosts/moves";
import { openPassword } from "../../services/services/passwords";
import { runOnHost, type WorkflowRef } from "../host-step";
import { RESTORE_TIMEOUT_MS } from "../pod-restore";
import { preCopyAndCutOver } from "./pre-copy";
import {
  COPY_TIMEOUT_MS,
  type Extras,
  INSTALL_TIMEOUT_MS,
  type Job,
  Marks,
  type MoveRun,
  moveEvent,
  type Phase,
  type Placed,
  POWER_TIMEOUT_MS,
  type Progress,
  serveExtras,
} from "./run";
import { waitForPodOperations } from "./settle";
import { undoMove } from "./undo";

export interface PodMoveParams {
  moveId: string;
}

interface Moved {
  downtimeMs: number | null;
  phases: Phase[];
  /** an evacuation's pre-copy, made while the pod served: not downtime */
  precopy: { ms: number; bytes: number } | null;
  to: Placed;
}

/**
 * One pod leaving its host (docs/hosts.md "Emptying a host"), instance id = the `pod_moves` row's id.
 *
 * evacuate: a new host of the region is chosen (its room and an SSH port of its range taken); the
 * pod's home is pre-copied while it still serves, then it stops and only what changed since goes
 * across, with its databases dumped into a backup made for the move (pre-copy.ts); the record switches
 * to the new host (its SSH port, its room back on the old one); the database services are installed
 * again with their passwords and the dumps loaded; the vhost gets its verified custom domains and
 * feedback widget; the pod serves again — the downtime is measured from the stop to here; the old
 * host's copy is deleted.
 *
 * lost: the same on the new host from the pod's latest verified backup (~/app and its databases;
 * the old host is not asked for anything), with an event naming the backup's time.
 *
 * A failure undoes what was done: the new host's copy removed, its room given back, and an evacuated
 * pod switched back and started again on its old host. Either way the move ends (done or error with
 * the reason, also a `moved`/`move_failed` event), and the host's next queued move starts.
 */
export class PodMoveWorkflow extends WorkflowEntrypoint<Bindings, PodMoveParams> {
  override async run(event: Readonly<WorkflowEvent<PodMoveParams>>, step: WorkflowStep) {
    const { moveId } = event.payload;
    const ref: WorkflowRef = { workflow: "POD_MOVE", instanceId: event.instanceId };
    const db = () => createDb(this.env.DB);
    const gaveUp = await waitForPodOperations(step, this.env, moveId);
    const job = await step.do("read the move", async (): Promise<MoveJob> => {
      const loaded = await loadMoveJob(db(), moveId);
      return gaveUp && loaded.kind === "run" ? { kind: "fail", podId: loaded.podId, reason: gaveUp } : loaded;
    });
    let result: { status: "over" | "done" | "error"; reason?: string; downtime_ms?: number | null };
    if (job.kind === "over") result = { status: "over" };
    else if (job.kind === "fail") {
      await step.do("record the failure", async () => {
        await endMove(db(), moveId, job.podId, { ok: false, reason: job.reason });
        return true;
      });
      result = { status: "error", reason: job.reason };
    } else {
      const progress: Progress = {
        placed: null,
        stoppedOld: false,
        createdNew: false,
        switched: false,
        backupId: null,
      };
      let outcome: Result<Moved>;
      try {
        outcome = await this.move(job, ref, step, progress);
      } catch (error) {
        outcome = fail(
          "internal",
          reasonOf(error, "the move's workflow stopped without a reason (control plane)"),
        );
      }
      if (outcome.ok) {
        const { downtimeMs, to, phases, precopy } = outcome.value;
        const spent = phases.map((p) => `${p.phase} ${(p.ms / 1000).toFixed(1)} s`).join(", ");
        const copied = precopy
          ? `; its files (${(precopy.bytes / 1e6).toFixed(1)} MB) were copied beforehand in ${(precopy.ms / 1000).toFixed(1)} s while it served`
          : "";
        const message =
          job.move === "evacuate"
            ? `moved from server ${job.fromHostName} to server ${to.hostName} (SSH port ${to.sshPort}); down for ${((downtimeMs ?? 0) / 1000).toFixed(1)} s (${spent})${copied}`
            : `server ${job.fromHostName} was lost: recreated on server ${to.hostName} (SSH port ${to.sshPort}) from the backup of ${job.backup?.createdAt}`;
        await step.do("record the move", async () => {
          await endMove(db(), moveId, job.podId, {
            ok: true,
            message,
            downtimeMs,
            metadata: {
              from_host: job.fromHostName,
              to_host: to.hostName,
              ssh_port: to.sshPort,
              ...(downtimeMs === null ? {} : { downtime_ms: downtimeMs, phases }),
              ...(precopy ? { precopy_ms: precopy.ms, precopy_bytes: precopy.bytes } : {}),
              ...(job.backup ? { backup_id: job.backup.id, backup_at: job.backup.createdAt } : {}),
            },
          });
          return true;
        });
        result = { status: "done", downtime_ms: downtimeMs };
      } else {
        await undoMove({ env: this.env, step, ref, job }, progress, outcome.message);
        result = { status: "error", reason: outcome.message };
      }
    }
    await step.do("start the host's next move", async () => {
      const origin = await moveOrigin(db(), moveId);
      if (origin) {
        await startNextMove(this.env, db(), origin.fromHostId);
        if (origin.kind === "lost") await resolveLostHostAlerts(this.env, db(), origin.fromHostId);
      }
      return true;
    });
    return result;
  }

  private async move(
    job: Job,
    ref: WorkflowRef,
    step: WorkflowStep,
    progress: Progress,
  ): Promise<Result<Moved>> {
    const run: MoveRun = { env: this.env, step, ref, job };
    const db = () => createDb(this.env.DB);
    const placed = await step.do("choose the new host", async () => placeMove(db(), job));
    if (!placed.ok) return fail("unavailable", placed.reason);
    progress.placed = placed;
    const spec = await step.do("the pod on the new host", async () =>
      moveSpec(this.env, db(), job, placed.sshPort),
    );
    await moveEvent(run, "progress", `moving pod ${job.podName} to server ${placed.hostName}`);

    const marks = new Marks(step);
    let stoppedAt: number | null = null;
    let data = job.backup;
    let ip: string | null;
    /** what the new host's vhost was given before the switch (an evacuation's, while it served) */
    let served: Extras | null = null;
    /** the new pod was started after its delta (a pod that ran, or whose databases need it running) */
    let startedNew = job.move === "lost";
    let precopy: { ms: number; bytes: number } | null = null;
    if (job.move === "evacuate") {
      const cut = await preCopyAndCutOver(run, { placed, spec, progress, marks });
      if (!cut.ok) return cut;
      ({ ip, served, precopy, stoppedAt, data, startedNew } = cut.value);
    } else {
      const created = await runOnHost(step, this.env, ref, {
        name: "create on the new host",
        hostId: placed.hostId,
        op: "pod.create",
        params: spec,
        timeoutMs: COPY_TIMEOUT_MS,
      });
      progress.createdNew = true;
      if (!created.ok) return created;
      ip = created.value.ip;
    }

    // The record follows, and this isolate's edge routes are dropped with it, so the next visit is
    // routed to the new host (other isolates follow within the route cache's few seconds).
    const switched = await step.do("move the record to the new host", async () => {
      const moved = await switchPodHost(db(), job, { ...placed, ip });
      forgetCachedReads();
      return moved;
    });
    if (!switched)
      return fail("conflict", `pod ${job.podName}'s record could not be moved to server ${placed.hostName}`);
    progress.switched = true;

    for (const service of job.services) {
      // Outside any step: the plaintext is never a step's output, so the engine never stores it.
      const password = await openPassword(
        this.env,
        { podId: job.podId, serviceType: service.type },
        service.passwordEncrypted,
      );
      if (!password.ok) return password;
      const installed = await runOnHost(step, this.env, ref, {
        name: `install ${service.type} on the new host`,
        hostId: placed.hostId,
        op: "service.install",
        params: { name: job.podName, type: service.type, password: password.value, limits: spec.limits },
        timeoutMs: INSTALL_TIMEOUT_MS,
      });
      if (!installed.ok)
        return fail(
          installed.code,
          `${service.type}: ${installed.message.split(password.value).join("***")}`,
        );
    }
    if (job.services.length > 0) await marks.mark("services installed");
    if (data) {
      const backup = data;
      const restored = await runOnHost(step, this.env, ref, {
        name: "restore on the new host",
        hostId: placed.hostId,
        op: "backup.restore",
        params: {
          name: job.podName,
          preset: job.preset,
          backupId: backup.id,
          bytes: backup.bytes,
          sha256: backup.sha256,
        },
        timeoutMs: RESTORE_TIMEOUT_MS,
      });
      if (!restored.ok) return restored;
      if (!restored.value.ok)
        return fail(
          "internal",
          `restoring backup ${backup.id} on server ${placed.hostName}: ${restored.value.reason}`,
        );
      if (job.move === "evacuate")
        await step.do("the move's backup restored", async () => {
          await markMoveBackupRestored(db(), backup.id);
          return true;
        });
      await marks.mark("restored");
    }

    // a domain verified or a widget changed during the move is sent again; else nothing to do
    const extras = await step.do("read the vhost's domains and feedback again", async () =>
      vhostExtras(this.env, db(), job.podId),
    );
    const set = await serveExtras(run, placed, extras, served);
    if (!set.ok) return set;
    const servingAt = await step.do("note the pod serving", async () => Date.now());
    marks.marks.push({ phase: "vhost", at: servingAt });
    const phases = marks.phases(stoppedAt);

    if (!job.wasRunning && startedNew) {
      const stopped = await runOnHost(step, this.env, ref, {
        name: "stop on the new host",
        hostId: placed.hostId,
        op: "pod.stop",
        params: { name: job.podName },
        timeoutMs: POWER_TIMEOUT_MS,
      });
      if (!stopped.ok) return stopped;
    }
    if (job.move === "evacuate") {
      const removed = await runOnHost(step, this.env, ref, {
        name: "delete on the old host",
        hostId: job.fromHostId,
        op: "pod.delete",
        params: { name: job.podName },
        timeoutMs: POWER_TIMEOUT_MS,
      });
      // The pod lives on the new host either way; what the old one kept is said, not hidden.
      if (!removed.ok)
        await moveEvent(
          run,
          "progress",
          `the old copy on server ${job.fromHostName} was not removed: ${removed.message}`,
        );
    }
    return ok({
      downtimeMs: stoppedAt === null || !job.wasRunning ? null : servingAt - stoppedAt,
      phases: stoppedAt === null || !job.wasRunning ? [] : phases,
      precopy,
      to: placed,
    });
  }
}
