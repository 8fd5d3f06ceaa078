import { ok, type Result } from "../../../shared/errors";
import { claimStagedBlob, discardStagedBlob, newStagingKey } from "../../services/blobs/staging";
import { type moveSpec, vhostExtras } from "../../services/hosts/move-job";
import { runOnHost } from "../host-step";
import { saveDatabases } from "./databases";
import {
  COPY_TIMEOUT_MS,
  dbOf,
  type Extras,
  type Job,
  type Marks,
  type MoveRun,
  moveEvent,
  type Placed,
  POWER_TIMEOUT_MS,
  type Progress,
  serveExtras,
} from "./run";

type Spec = Awaited<ReturnType<typeof moveSpec>>;

export interface CutOver {
  /** the pod's address on the new host, once it runs there */
  ip: string | null;
  /** what the new host's vhost was given before the switch, while the pod still served */
  served: Extras;
  precopy: { ms: number; bytes: number };
  /** when the pod stopped on the old host: its downtime starts here */
  stoppedAt: number;
  /** the move's backup of the databases, dumped while the pod was stopped */
  data: Job["backup"];
  /** the new pod was started after its delta (a pod that ran, or whose databases need it running) */
  startedNew: boolean;
}

/**
 * An evacuation up to the switch of the record, its downtime kept to the delta:
 *
 * 1. The pre-copy, while the pod still serves on the old host: its whole home streams host → R2 →
 *    host into the new pod, which is made, given its vhost's domains, then stopped.
 * 2. The downtime: the pod stops on the old host; what changed in its home since the pre-copy began
 *    (and the databases, dumped) goes across; the new pod starts on it.
 */
export async function preCopyAndCutOver(
  run: MoveRun,
  input: { placed: Placed; spec: Spec; progress: Progress; marks: Marks },
): Promise<Result<CutOver>> {
  const { step, env, ref, job } = run;
  const { placed, spec, progress, marks } = input;
  await moveEvent(
    run,
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
  const exported = await runOnHost(step, env, ref, {
    name: "export the home",
    hostId: job.fromHostId,
    op: "pod.clone.export",
    params: { name: job.podName, blobKey: keys.exported },
    timeoutMs: COPY_TIMEOUT_MS,
  });
  if (!exported.ok) return exported;
  await step.do("hand the home to the new host", async () => {
    await claimStagedBlob(env, keys.exported, keys.imported);
    return true;
  });
  const releases = exported.value.releases;
  const home = { blobKey: keys.imported, ...(releases ? { releases } : {}) };
  const created = await runOnHost(step, env, ref, {
    name: "create on the new host",
    hostId: placed.hostId,
    op: "pod.create",
    params: { ...spec, home },
    timeoutMs: COPY_TIMEOUT_MS,
  });
  progress.createdNew = true;
  await step.do("discard the copy of the home", async () => {
    await discardStagedBlob(env, keys.imported);
    return true;
  });
  if (!created.ok) return created;
  let ip = created.value.ip;
  const served = await step.do("read the vhost's domains and feedback", async () =>
    vhostExtras(env, dbOf(run), job.podId),
  );
  const set = await serveExtras(run, placed, served, null);
  if (!set.ok) return set;
  const parked = await runOnHost(step, env, ref, {
    name: "stop the copy on the new host",
    hostId: placed.hostId,
    op: "pod.stop",
    params: { name: job.podName },
    timeoutMs: POWER_TIMEOUT_MS,
  });
  if (!parked.ok) return parked;
  const precopyTo = await step.do("note the pre-copy's end", async () => Date.now());
  const precopy = { ms: precopyTo - precopyFrom, bytes: exported.value.bytes };

  const stoppedAt = await step.do("note the stop's time", async () => Date.now());
  if (job.wasRunning) {
    const stopped = await runOnHost(step, env, ref, {
      name: "stop on the old host",
      hostId: job.fromHostId,
      op: "pod.stop",
      params: { name: job.podName },
      timeoutMs: POWER_TIMEOUT_MS,
    });
    progress.stoppedOld = true;
    if (!stopped.ok) return stopped;
    await marks.mark("stop");
  }
  let data = job.backup;
  if (job.services.length > 0) {
    const saved = await saveDatabases(run, progress, placed);
    if (!saved.ok) return saved;
    data = saved.value;
    await marks.mark("databases dumped");
  }
  // an agent older than the pre-copy names no start: everything is sent again (correct, slow)
  const since = exported.value.startedAt ?? 0;
  const delta = await runOnHost(step, env, ref, {
    name: "export the changes",
    hostId: job.fromHostId,
    op: "pod.move.delta.export",
    params: { name: job.podName, id: job.moveId.toLowerCase(), since, blobKey: keys.deltaExported },
    timeoutMs: COPY_TIMEOUT_MS,
  });
  if (!delta.ok) return delta;
  await step.do("hand the changes to the new host", async () => {
    await claimStagedBlob(env, keys.deltaExported, keys.deltaImported);
    return true;
  });
  const applied = await runOnHost(step, env, ref, {
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
    await discardStagedBlob(env, keys.deltaImported);
    return true;
  });
  if (!applied.ok) return applied;
  await marks.mark(`changes sent (${delta.value.changed} changed, ${applied.value.removed} removed)`);
  let startedNew = false;
  if (job.wasRunning || job.services.length > 0) {
    const started = await runOnHost(step, env, ref, {
      name: "start on the new host",
      hostId: placed.hostId,
      op: "pod.start",
      params: { name: job.podName },
      timeoutMs: POWER_TIMEOUT_MS,
    });
    if (!started.ok) return started;
    ip = started.value.ip;
    startedNew = true;
    await marks.mark("started");
  }
  return ok({ ip, served, precopy, stoppedAt, data, startedNew });
}
