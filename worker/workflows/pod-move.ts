import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { fail, ok, type Result } from "../../shared/errors";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { forgetCachedReads } from "../lib/isolate-cache";
import { insertBackup } from "../services/backups/create";
import { checkUpload } from "../services/backups/job";
import { failBackup } from "../services/backups/records";
import { claimStagedBlob, discardStagedBlob, newStagingKey } from "../services/blobs/staging";
import {
  endMove,
  loadMoveJob,
  type MoveJob,
  markMoveBackupRestored,
  moveOrigin,
  moveSpec,
  type Placement,
  placeMove,
  releasePlacement,
  switchBack,
  switchPodHost,
  vhostExtras,
} from "../services/hosts/move-job";
import { resolveLostHostAlerts, startNextMove } from "../services/hosts/moves";
import { recordEventStatement } from "../services/pods/events";
import { openPassword } from "../services/services/passwords";
import { runOnHost, type WorkflowRef } from "./host-step";
import { CREATE_TIMEOUT_MS as BACKUP_TIMEOUT_MS } from "./pod-backup";
import { RESTORE_TIMEOUT_MS } from "./pod-restore";

export interface PodMoveParams {
  moveId: string;
}

/** stop, start, delete: a container's life, a few seconds each */
const POWER_TIMEOUT_MS = 60_000;
/** the home streamed to R2 and back (a pod's disk is at most tens of GB) */
const COPY_TIMEOUT_MS = 60 * 60_000;
/** a database sidecar made and started */
const INSTALL_TIMEOUT_MS = 180_000;

type Job = Extract<MoveJob, { kind: "run" }>;
type Placed = Extract<Placement, { ok: true }>;

/** a span of an evacuation's downtime: what ended at its end */
interface Phase {
  phase: string;
  ms: number;
}

interface Moved {
  downtimeMs: number | null;
  phases: Phase[];
  /** an evacuation's pre-copy, made while the pod served: not downtime */
  precopy: { ms: number; bytes: number } | null;
  to: Placed;
}

type Extras = Awaited<ReturnType<typeof vhostExtras>>;

/** What the move did so far, rebuilt as steps replay: what undoing it must undo. */
interface Progress {
  placed: Placed | null;
  stoppedOld: boolean;
  createdNew: boolean;
  switched: boolean;
  backupId: string | null;
}

/**
 * One pod leaving its host (docs/hosts.md "Emptying a host"), instance id = the `pod_moves` row's id.
 *
 * evacuate: a new host of the region is chosen (its room and an SSH port of its range taken); the pod
 * is stopped on the old host (nothing written after the copy is lost); its databases, if it has any,
 * are saved in a backup made for the move (dumps, in helper containers); its whole home (~/app with
 * its .env, the releases, the SSH keys, everything) streams host → R2 → host into the new pod, made
 * with the same id, name and plan; the record switches to the new host (its SSH port, its room back on
 * the old one); the database services are installed again with their passwords and the dumps loaded;
 * the vhost gets its verified custom domains and feedback widget; the pod serves again — the downtime
 * is measured from the stop to here; the old host's copy is deleted.
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
    const job = await step.do("read the move", async () => loadMoveJob(db(), moveId));
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
        outcome = fail("internal", error instanceof Error ? error.message : String(error));
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
        await this.undo(job, ref, step, progress, outcome.message);
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
    const db = () => createDb(this.env.DB);
    const placed = await step.do("choose the new host", async () => placeMove(db(), job));
    if (!placed.ok) return fail("unavailable", placed.reason);
    progress.placed = placed;
    const spec = await step.do("the pod on the new host", async () =>
      moveSpec(this.env, db(), job, placed.sshPort),
    );
    await this.event(step, job, "progress", `moving pod ${job.podName} to server ${placed.hostName}`);

    // where the downtime goes, for the event: each mark a step, so a replay gives the same times
    const marks: { phase: string; at: number }[] = [];
    const mark = async (phase: string) => {
      marks.push({ phase, at: await step.do(`mark: ${phase}`, async () => Date.now()) });
    };
    let stoppedAt: number | null = null;
    let data = job.backup;
    let ip: string | null;
    /** what the new host's vhost was given before the switch (an evacuation's, while it served) */
    let served: Extras | null = null;
    /** the new pod was started after its delta (a pod that ran, or whose databases need it running) */
    let startedNew = job.move === "lost";
    let precopy: { ms: number; bytes: number } | null = null;
    if (job.move === "evacuate") {
      // 1. The pre-copy, while the pod still serves on the old host: its whole home streams
      // host → R2 → host into the new pod, which is made, given its vhost's domains, then stopped.
      await this.event(
        step,
        job,
        "progress",
        `copying pod ${job.podName}'s files to server ${placed.hostName} while it serves`,
      );
      const precopyFrom = await step.do("note the pre-copy's start", async () => Date.now());
      const keys = await step.do("name the copies of the home", async () => ({
        exported: newStagingKey(job.fromHostId),
        imported: newStagingKey(placed.hostId),
        deltaExported: newStagingKey(job.fromHostId),
        deltaImported: newStagingKey(placed.hostId),
      }));
      const exported = await runOnHost(step, this.env, ref, {
        name: "export the home",
        hostId: job.fromHostId,
        op: "pod.clone.export",
        params: { name: job.podName, blobKey: keys.exported },
        timeoutMs: COPY_TIMEOUT_MS,
      });
      if (!exported.ok) return exported;
      await step.do("hand the home to the new host", async () => {
        await claimStagedBlob(this.env, keys.exported, keys.imported);
        return true;
      });
      const releases = exported.value.releases;
      const home = { blobKey: keys.imported, ...(releases ? { releases } : {}) };
      const created = await runOnHost(step, this.env, ref, {
        name: "create on the new host",
        hostId: placed.hostId,
        op: "pod.create",
        params: { ...spec, home },
        timeoutMs: COPY_TIMEOUT_MS,
      });
      progress.createdNew = true;
      await step.do("discard the copy of the home", async () => {
        await discardStagedBlob(this.env, keys.imported);
        return true;
      });
      if (!created.ok) return created;
      ip = created.value.ip;
      served = await step.do("read the vhost's domains and feedback", async () =>
        vhostExtras(this.env, db(), job.podId),
      );
      const set = await this.serveExtras(job, ref, step, placed, served, null);
      if (!set.ok) return set;
      const parked = await runOnHost(step, this.env, ref, {
        name: "stop the copy on the new host",
        hostId: placed.hostId,
        op: "pod.stop",
        params: { name: job.podName },
        timeoutMs: POWER_TIMEOUT_MS,
      });
      if (!parked.ok) return parked;
      const precopyTo = await step.do("note the pre-copy's end", async () => Date.now());
      precopy = { ms: precopyTo - precopyFrom, bytes: exported.value.bytes };

      // 2. The downtime: the pod stops on the old host; what changed in its home since the
      // pre-copy began (and the databases, dumped) goes across; the new pod starts on it.
      stoppedAt = await step.do("note the stop's time", async () => Date.now());
      if (job.wasRunning) {
        const stopped = await runOnHost(step, this.env, ref, {
          name: "stop on the old host",
          hostId: job.fromHostId,
          op: "pod.stop",
          params: { name: job.podName },
          timeoutMs: POWER_TIMEOUT_MS,
        });
        progress.stoppedOld = true;
        if (!stopped.ok) return stopped;
        await mark("stop");
      }
      if (job.services.length > 0) {
        const saved = await this.saveDatabases(job, ref, step, progress, placed);
        if (!saved.ok) return saved;
        data = saved.value;
        await mark("databases dumped");
      }
      // an agent older than the pre-copy names no start: everything is sent again (correct, slow)
      const since = exported.value.startedAt ?? 0;
      const delta = await runOnHost(step, this.env, ref, {
        name: "export the changes",
        hostId: job.fromHostId,
        op: "pod.move.delta.export",
        params: { name: job.podName, id: job.moveId.toLowerCase(), since, blobKey: keys.deltaExported },
        timeoutMs: COPY_TIMEOUT_MS,
      });
      if (!delta.ok) return delta;
      await step.do("hand the changes to the new host", async () => {
        await claimStagedBlob(this.env, keys.deltaExported, keys.deltaImported);
        return true;
      });
      const applied = await runOnHost(step, this.env, ref, {
        name: "apply the changes on the new host",
        hostId: placed.hostId,
        op: "pod.move.delta.apply",
        params: {
          name: job.podName,
          id: job.moveId.toLowerCase(),
          blobKey: keys.deltaImported,
          releases: delta.value.releases,
        },
        timeoutMs: COPY_TIMEOUT_MS,
      });
      await step.do("discard the changes", async () => {
        await discardStagedBlob(this.env, keys.deltaImported);
        return true;
      });
      if (!applied.ok) return applied;
      await mark(`changes sent (${delta.value.changed} changed, ${applied.value.removed} removed)`);
      if (job.wasRunning || job.services.length > 0) {
        const started = await runOnHost(step, this.env, ref, {
          name: "start on the new host",
          hostId: placed.hostId,
          op: "pod.start",
          params: { name: job.podName },
          timeoutMs: POWER_TIMEOUT_MS,
        });
        if (!started.ok) return started;
        ip = started.value.ip;
        startedNew = true;
        await mark("started");
      }
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
    if (job.services.length > 0) await mark("services installed");
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
      await mark("restored");
    }

    // a domain verified or a widget changed during the move is sent again; else nothing to do
    const extras = await step.do("read the vhost's domains and feedback again", async () =>
      vhostExtras(this.env, db(), job.podId),
    );
    const set = await this.serveExtras(job, ref, step, placed, extras, served);
    if (!set.ok) return set;
    const servingAt = await step.do("note the pod serving", async () => Date.now());
    marks.push({ phase: "vhost", at: servingAt });
    const phases: Phase[] = [];
    let since = stoppedAt;
    for (const m of marks) {
      if (since !== null) phases.push({ phase: m.phase, ms: m.at - since });
      since = m.at;
    }

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
        await this.event(
          step,
          job,
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

  /**
   * The vhost's custom domains and feedback widget on the new host (the pod runs there: a vhost is
   * rendered with its address), each only when it differs from what was sent before (`before`).
   */
  private async serveExtras(
    job: Job,
    ref: WorkflowRef,
    step: WorkflowStep,
    placed: Placed,
    extras: Extras,
    before: Extras | null,
  ): Promise<Result<true>> {
    const again = before ? " again" : "";
    if (extras.domains.length > 0 && JSON.stringify(extras.domains) !== JSON.stringify(before?.domains)) {
      const set = await runOnHost(step, this.env, ref, {
        name: `serve the custom domains${again}`,
        hostId: placed.hostId,
        op: "pod.domains.set",
        params: { name: job.podName, domains: extras.domains },
        timeoutMs: POWER_TIMEOUT_MS,
      });
      if (!set.ok) return set;
    }
    if (extras.feedback && JSON.stringify(extras.feedback) !== JSON.stringify(before?.feedback)) {
      const set = await runOnHost(step, this.env, ref, {
        name: `serve the feedback widget${again}`,
        hostId: placed.hostId,
        op: "pod.feedback.set",
        params: { name: job.podName, feedback: extras.feedback },
        timeoutMs: POWER_TIMEOUT_MS,
      });
      if (!set.ok) return set;
    }
    return ok(true);
  }

  /** The databases of a stopped pod, dumped into a backup made for the move (`manual`, noted so). */
  private async saveDatabases(
    job: Job,
    ref: WorkflowRef,
    step: WorkflowStep,
    progress: Progress,
    placed: Placed,
  ): Promise<Result<{ id: string; bytes: number; sha256: string; createdAt: string }>> {
    const db = () => createDb(this.env.DB);
    const row = await step.do("record the move's backup", async () => {
      const inserted = await insertBackup(
        db(),
        { id: job.podId, name: job.podName },
        { trigger: "manual", note: `made to move the pod to server ${placed.hostName}` },
      );
      return inserted.ok
        ? { ok: true as const, id: inserted.value.id, createdAt: inserted.value.createdAt }
        : { ok: false as const, reason: inserted.message };
    });
    if (!row.ok) return fail("conflict", `the databases could not be saved for the move: ${row.reason}`);
    progress.backupId = row.id;
    const made = await runOnHost(step, this.env, ref, {
      name: "dump the databases",
      hostId: job.fromHostId,
      op: "backup.create",
      params: { name: job.podName, backupId: row.id, preset: job.preset, whenStopped: "helper" },
      timeoutMs: BACKUP_TIMEOUT_MS,
    });
    const facts = await step.do("check the dump", async () => checkUpload(this.env, db(), row.id, made));
    if (!facts.ok) return fail("internal", `the databases could not be saved for the move: ${facts.reason}`);
    return ok({ id: row.id, bytes: facts.bytes, sha256: facts.sha256, createdAt: row.createdAt });
  }

  /** Puts back what a failed move did, then ends it with the reason. */
  private async undo(job: Job, ref: WorkflowRef, step: WorkflowStep, progress: Progress, why: string) {
    let reason = why;
    const db = () => createDb(this.env.DB);
    const placed = progress.placed;
    // An evacuated pod is still whole on its old host: it goes back there. A lost host's pod stays
    // on the new host, with what it got (there is nowhere else), and the reason says what is missing.
    const goBack = job.move === "evacuate" || !progress.switched;
    if (placed && goBack) {
      if (progress.createdNew) {
        const removed = await runOnHost(step, this.env, ref, {
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
        if (progress.switched) await switchBack(db(), job, placed.hostId);
        else await releasePlacement(db(), job, placed.hostId);
        return true;
      });
    }
    if (job.move === "evacuate" && progress.stoppedOld) {
      const started = await runOnHost(step, this.env, ref, {
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
      if (backupId) await failBackup(this.env, db(), backupId, `the move failed: ${final}`);
      await endMove(db(), job.moveId, job.podId, { ok: false, reason: final });
      return true;
    });
  }

  private event(step: WorkflowStep, job: Job, type: "progress", message: string) {
    return step.do(`event: ${type}: ${message}`, async () => {
      await recordEventStatement(createDb(this.env.DB), job.podId, type, message);
      return true;
    });
  }
}
