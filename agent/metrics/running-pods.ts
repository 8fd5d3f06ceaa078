import type { ContainerInfo, ContainerInspectInfo } from "dockerode";
import { PRESET_SLUGS, type PresetSlug } from "../../shared/catalog";
import type { PodSidecars } from "../../shared/protocol";
import { ServiceType } from "../../shared/protocol/services";
import type { AgentConfig } from "../config";
import type { DockerClient } from "../docker/client";
import {
  LABEL_POD,
  LABEL_PORT,
  LABEL_SERVICE,
  LABEL_SERVICE_POD,
  podNames,
  prefixFilter,
  serviceNames,
} from "../docker/naming";
import { containerIp, inspectContainer } from "../docker/resources";
import { processStart } from "./cgroup";
import { mapLimit } from "./map-limit";

/** What the watch keeps of a container's run, from its inspect when the run was first seen. */
interface Run {
  /** the container's id */
  id: string;
  /** its init process on the host (the cgroup reads go through it) */
  pid: number;
  /** the preset's web port (the container's label) */
  port: number | null;
  /** from the container's image; null for an image this agent's configuration does not name */
  preset: PresetSlug | null;
  /** ms since the epoch */
  startedAt: number;
  /** the inspect's address on the pod's network (the list's own is used when it has one) */
  ip: string | null;
}

/** A running pod container as the periodic watch sees it. */
export interface RunningPod extends Run {
  name: string;
  container: string;
  /** the pod's address on its own network (what the ingress forwards to) */
  ip: string | null;
}

const INSPECT_CONCURRENCY = 4;

/**
 * Not the inspect itself: ~20 KB of JSON per container, kept for every running pod between ticks,
 * where the watch needs these few fields.
 */
interface Known {
  run: Run;
  /** when the kernel started `run.pid`: the same value later means the same run */
  pidStart: string;
}

/**
 * Every container of this agent's prefix that belongs to a pod, from ONE container list per call:
 * the running ones with what the watch needs of them, the others by name only.
 *
 * A running container is inspected once per run (the first time it is seen, and again after it
 * restarted), not once per tick: an inspect per pod and tick was engine work that grew with the
 * host's pods while they idled (issue #17 item 5). That it is still the same run is read off the
 * kernel, not the engine: its init process (the inspect's pid) still exists and started when it did
 * then (`/proc/<pid>/stat`; a pid is reused only by a process that starts later). A restart
 * (`docker restart`, the engine's restart policy, an engine restart) gives the container a new init
 * process, so it is inspected again and its new start time is reported.
 */
export class PodLister {
  private readonly known = new Map<string, Known>();

  constructor(
    private readonly docker: DockerClient,
    private readonly config: AgentConfig,
  ) {}

  async list(): Promise<{ running: RunningPod[]; stopped: string[]; sidecars: PodSidecars[] }> {
    const { namePrefix } = this.config;
    const list = await this.docker.listContainers({ all: true, filters: prefixFilter(namePrefix) });
    const sidecars = sidecarsIn(list, namePrefix);
    const stopped: string[] = [];
    const seen = new Set<string>();
    const found = await mapLimit(list, INSPECT_CONCURRENCY, async (c): Promise<RunningPod | null> => {
      const name = c.Labels[LABEL_POD];
      if (!name) return null;
      const names = podNames(namePrefix, name);
      // Only the pod's own container (a clone's short-lived helper carries the pod label too).
      if (!c.Names.includes(`/${names.container}`)) return null;
      if (c.State !== "running") {
        stopped.push(name);
        return null;
      }
      seen.add(c.Id);
      const run = await this.runOf(c, names.container, names.network);
      if (!run) return null;
      return {
        name,
        container: names.container,
        ...run,
        // the list's own address is as fresh as the list; the inspect's when the list has none
        ip: c.NetworkSettings?.Networks?.[names.network]?.IPAddress || run.ip,
      };
    });
    for (const id of [...this.known.keys()]) if (!seen.has(id)) this.known.delete(id);
    const running = found.filter((p): p is RunningPod => p !== null);
    return {
      running,
      stopped: stopped.sort(),
      // the running pods' sidecars (every running pod, none for a pod without any)
      sidecars: running.map((p) => ({ name: p.name, services: sidecars.get(p.name) ?? [] })),
    };
  }

  /** The container's current run: remembered, or inspected now. Null: not running after all. */
  private async runOf(c: ContainerInfo, container: string, network: string): Promise<Run | null> {
    const known = this.known.get(c.Id);
    if (known && (await processStart(known.run.pid)) === known.pidStart) return known.run;
    this.known.delete(c.Id);
    // Gone or stopped since the list: left out of this tick.
    const info = await inspectContainer(this.docker, container).catch(() => null);
    if (!info?.State.Running || info.State.Restarting) return null;
    const run = this.runIn(info, network);
    const pidStart = await processStart(run.pid);
    // Remembered only when its process can be told apart later (else: inspected every tick, as before).
    if (pidStart !== null && info.Id === c.Id) this.known.set(c.Id, { run, pidStart });
    return run;
  }

  private runIn(info: ContainerInspectInfo, network: string): Run {
    const port = Number(info.Config.Labels?.[LABEL_PORT]);
    return {
      id: info.Id,
      pid: info.State.Pid,
      port: Number.isInteger(port) && port > 0 ? port : null,
      preset: this.presetOf(info.Config.Image),
      startedAt: Date.parse(info.State.StartedAt),
      ip: containerIp(info, network),
    };
  }

  private presetOf(image: string): PresetSlug | null {
    return PRESET_SLUGS.find((p) => this.config.images[p] === image) ?? null;
  }
}

/**
 * The database sidecars in a container list, by pod: only a container whose labels and name make it
 * this prefix's sidecar of that pod and type (agent/services/sidecars.ts's serviceContainersOf).
 */
function sidecarsIn(list: ContainerInfo[], prefix: string): Map<string, PodSidecars["services"]> {
  const byPod = new Map<string, PodSidecars["services"]>();
  for (const c of list) {
    const pod = c.Labels[LABEL_SERVICE_POD];
    const type = ServiceType.safeParse(c.Labels[LABEL_SERVICE]);
    if (!pod || !type.success) continue;
    if (!c.Names.includes(`/${serviceNames(prefix, pod, type.data).container}`)) continue;
    const state = c.State === "running" ? "running" : c.State === "restarting" ? "restarting" : "exited";
    byPod.set(pod, [...(byPod.get(pod) ?? []), { type: type.data, state }]);
  }
  return byPod;
}

/** One look without memory (every running pod inspected): for a caller that looks once. */
export const listPods = (docker: DockerClient, config: AgentConfig) => new PodLister(docker, config).list();
