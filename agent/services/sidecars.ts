import type { ContainerInspectInfo } from "dockerode";
import type { PodLimits } from "../../shared/protocol";
import { SERVICE_PORTS, ServiceType } from "../../shared/protocol/services";
import type { AgentConfig } from "../config";
import { podDiskOf } from "../disk/pod-disk";
import { type DockerClient, isConflict, isNotFound } from "../docker/client";
import { resourcesOf } from "../docker/container-spec";
import { execInContainer } from "../docker/exec";
import {
  backupHelperName,
  LABEL_POD_ID,
  LABEL_PREFIX,
  LABEL_SERVICE,
  LABEL_SERVICE_POD,
  podNames,
  serviceLabels,
  serviceNames,
} from "../docker/naming";
import {
  assertOwned,
  ensureVolume,
  inspectContainer,
  removeContainer,
  removeVolume,
  startContainer,
  stopContainer,
} from "../docker/resources";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import { MIN_APP_MEMORY_MB, serviceMemoryMb, sidecarCreateOptions } from "./spec";

export interface ServiceDeps {
  config: AgentConfig;
  docker: DockerClient;
  log: Logger;
}

export interface ServiceContainer {
  type: ServiceType;
  /** the container's name (what docker exec / getContainer take) */
  container: string;
  running: boolean;
}

/** /opt/podhost/bin of the service images (images/README.md "Service images") */
const BIN = "/opt/podhost/bin";
/** svc-init waits up to 60 s for its server; this bounds the whole exec */
const INIT_TIMEOUT_MS = 90_000;

/**
 * The pod's database sidecars, any state (also for the backups code: dump and load run in them with
 * `docker exec <container> /opt/podhost/bin/svc-dump|svc-load`).
 */
export async function serviceContainersOf(
  docker: DockerClient,
  prefix: string,
  pod: string,
): Promise<ServiceContainer[]> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_PREFIX}=${prefix}`, `${LABEL_SERVICE_POD}=${pod}`] },
  });
  return list.flatMap((c) => {
    const type = ServiceType.safeParse(c.Labels[LABEL_SERVICE]);
    const container = c.Names[0]?.replace(/^\//, "");
    if (!type.success || !container || container !== serviceNames(prefix, pod, type.data).container)
      return [];
    return [{ type: type.data, container, running: c.State === "running" }];
  });
}

/**
 * Sidecars made before their containers got helper names (`<pod container>-svc-<type>`, which a
 * pod named `<pod>-svc-<type>` could have had) take the new name at the agent's start, so they are
 * found, stopped and removed with their pod, and never run twice on one data volume. Only a
 * container whose labels make it this prefix's sidecar of that pod and type is renamed.
 */
export async function renameLegacySidecars(docker: DockerClient, prefix: string, log: Logger): Promise<void> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_PREFIX}=${prefix}`, LABEL_SERVICE, LABEL_SERVICE_POD] },
  });
  for (const c of list) {
    const pod = c.Labels[LABEL_SERVICE_POD] ?? "";
    const type = ServiceType.safeParse(c.Labels[LABEL_SERVICE]);
    if (!type.success) continue;
    const name = c.Names[0]?.replace(/^\//, "");
    if (name !== `${podNames(prefix, pod).container}-svc-${type.data}`) continue;
    const to = serviceNames(prefix, pod, type.data).container;
    await docker.getContainer(c.Id).rename({ name: to });
    log.info("sidecar renamed to its helper name", { pod, from: name, to });
  }
}

/** The app container's memory with these services beside it: the plan's, less their shares. */
export function appMemoryMb(limits: PodLimits, services: number): number {
  return Math.max(MIN_APP_MEMORY_MB, limits.memoryMb - services * serviceMemoryMb(limits));
}

/**
 * Split the plan's memory between the app container and the pod's sidecars (./spec.ts): each
 * sidecar its share, the app the rest. After an install, a removal and a resize. (Lowering a
 * limit below what a container uses makes the kernel reclaim, and kill in it if it cannot.)
 */
export async function applyMemory(deps: ServiceDeps, pod: string, limits: PodLimits): Promise<void> {
  const sidecars = await serviceContainersOf(deps.docker, deps.config.namePrefix, pod);
  const share = serviceMemoryMb(limits) * 1024 * 1024;
  await deps.docker
    .getContainer(podNames(deps.config.namePrefix, pod).container)
    .update(resourcesOf({ ...limits, memoryMb: appMemoryMb(limits, sidecars.length) }));
  for (const s of sidecars) {
    await deps.docker.getContainer(s.container).update({
      Memory: share,
      MemorySwap: share,
      NanoCpus: Math.round(limits.cpu * 1e9),
    });
  }
}

const running = (info: ContainerInspectInfo | null) => Boolean(info?.State.Running && !info.State.Restarting);

/**
 * Run the pod's `type` service: data volume (a subvolume in the pod's disk qgroup where the pod's
 * home is one), sidecar in the pod's network namespace, `svc-init` with the password on stdin,
 * memory split. A retry adopts what an earlier call made; what this call made goes again on failure.
 */
export async function installService(
  deps: ServiceDeps,
  p: { name: string; type: ServiceType; password: string; limits: PodLimits },
  signal?: AbortSignal,
): Promise<{ version: string; port: number }> {
  const { docker, config } = deps;
  const prefix = config.namePrefix;
  const pod = podNames(prefix, p.name);
  const n = serviceNames(prefix, p.name, p.type);
  const podInfo = await inspectContainer(docker, pod.container);
  if (!podInfo) throw new AgentError("not_found", `pod ${p.name} has no container on this host`);
  if (!running(podInfo)) throw new AgentError("conflict", `pod ${p.name} is not running`);
  const podId = podInfo.Config.Labels?.[LABEL_POD_ID] ?? "";
  const image = config.serviceImages[p.type];
  try {
    await docker.getImage(image).inspect();
  } catch (err) {
    if (isNotFound(err)) throw new AgentError("unavailable", `image ${image} not present on this host`);
    throw err;
  }
  const labels = serviceLabels(prefix, p.name, podId, p.type);
  const disk = podDiskOf(config.podDiskRoot);
  const onDisk = disk ? await disk.exists(pod.volume) : false;
  const made = { volume: false, container: false };
  try {
    let info = await inspectContainer(docker, n.container);
    if (info) assertOwned("container", n.container, info.Config.Labels, podId);
    made.volume = await ensureVolume(
      docker,
      n.volume,
      labels,
      disk && onDisk ? () => disk.createMember(n.volume, pod.volume) : undefined,
    );
    if (!info) {
      try {
        await docker.createContainer(sidecarCreateOptions(prefix, p.name, podId, p.type, image, p.limits));
        made.container = true;
      } catch (err) {
        if (!isConflict(err)) throw err; // a concurrent retry made it: adopt
      }
      info = await inspectContainer(docker, n.container);
      if (!info) throw new AgentError("internal", `sidecar ${n.container} vanished after create`);
      assertOwned("container", n.container, info.Config.Labels, podId);
    }
    // Started after the pod container, or restarted if it runs in an older namespace of it.
    await syncOne(docker, podInfo, n.container);
    const r = await execInContainer(docker, n.container, [`${BIN}/svc-init`], {
      stdin: `${p.password}\n`,
      maxOutputBytes: 4096,
      signal: signal
        ? AbortSignal.any([signal, AbortSignal.timeout(INIT_TIMEOUT_MS)])
        : AbortSignal.timeout(INIT_TIMEOUT_MS),
    });
    const version = r.stdout.trim();
    if (r.exitCode !== 0 || !/^\d+(\.\d+){0,3}$/.test(version)) {
      const why = r.stderr.trim().split("\n").pop()?.slice(0, 300) || `exit ${r.exitCode}`;
      throw new AgentError("internal", `${p.type} did not start: ${why}`);
    }
    await applyMemory(deps, p.name, p.limits);
    return { version, port: SERVICE_PORTS[p.type] };
  } catch (err) {
    if (made.container) await removeContainer(docker, n.container).catch(() => undefined);
    if (made.volume) {
      await removeVolume(docker, n.volume).catch(() => undefined);
      if (disk && onDisk) await disk.removeMember(n.volume, pod.volume).catch(() => undefined);
    }
    throw err;
  }
}

/** The sidecar and its data go; the app gets its memory back. Absent: nothing to do. */
export async function removeService(
  deps: ServiceDeps,
  p: { name: string; type: ServiceType; limits?: PodLimits },
): Promise<void> {
  const { docker, config } = deps;
  const prefix = config.namePrefix;
  const n = serviceNames(prefix, p.name, p.type);
  await removeContainer(docker, n.container);
  await removeVolume(docker, n.volume);
  const disk = podDiskOf(config.podDiskRoot);
  await disk?.removeMember(n.volume, podNames(prefix, p.name).volume);
  if (p.limits && (await inspectContainer(docker, podNames(prefix, p.name).container)))
    await applyMemory(deps, p.name, p.limits);
}

/** Every service of the pod, with its data (pod.delete, before the home goes). */
export async function removeAllServices(deps: ServiceDeps, pod: string): Promise<void> {
  for (const s of await serviceContainersOf(deps.docker, deps.config.namePrefix, pod)) {
    await removeService(deps, { name: pod, type: s.type });
  }
  // a volume whose container is gone already (an interrupted install or delete)
  for (const type of ServiceType.options) {
    await removeService(deps, { name: pod, type });
  }
}

/**
 * One sidecar in step with its pod container: running while it runs, in its current network
 * namespace (a sidecar started before the pod container's latest start is in a dead namespace of
 * it: restarted), stopped while it is stopped.
 */
async function syncOne(docker: DockerClient, podInfo: ContainerInspectInfo | null, container: string) {
  const info = await inspectContainer(docker, container);
  if (!info) return;
  if (running(podInfo) && podInfo) {
    if (!running(info)) {
      // A stopped pod's backup helper on this data (../backups/stopped-pod.ts) left by an agent
      // that died mid-job: two servers must never share a data directory.
      await removeContainer(docker, backupHelperName(container));
      await startContainer(docker, container);
    } else if (Date.parse(info.State.StartedAt) < Date.parse(podInfo.State.StartedAt))
      await docker.getContainer(container).restart({ t: 20 });
  } else if (running(info)) {
    await stopContainer(docker, container);
  }
}

/**
 * All the pod's sidecars in step with its container (./syncOne): after pod.start/stop/restart, when
 * the engine (re)starts the pod container on its own (../docker/events.ts), at the agent's start.
 */
export async function syncSidecars(deps: ServiceDeps, pod: string): Promise<void> {
  const sidecars = await serviceContainersOf(deps.docker, deps.config.namePrefix, pod);
  if (sidecars.length === 0) return;
  const podInfo = await inspectContainer(deps.docker, podNames(deps.config.namePrefix, pod).container);
  for (const s of sidecars) {
    await syncOne(deps.docker, podInfo, s.container).catch((err: unknown) =>
      deps.log.error("sidecar not in step with its pod", { pod, service: s.type, error: String(err) }),
    );
  }
}

/** Every pod that has sidecars (the agent's start: the engine may have restarted meanwhile). */
export async function podsWithServices(docker: DockerClient, prefix: string): Promise<string[]> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_PREFIX}=${prefix}`, LABEL_SERVICE_POD] },
  });
  return [...new Set(list.map((c) => c.Labels[LABEL_SERVICE_POD]).filter((p): p is string => Boolean(p)))];
}
