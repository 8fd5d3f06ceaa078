import type { ContainerInfo, ContainerInspectInfo } from "dockerode";
import { PRESET_SLUGS, type PresetSlug } from "../../shared/catalog";
import type { AgentConfig } from "../config";
import type { DockerClient } from "../docker/client";
import { LABEL_POD, LABEL_PORT, podNames, prefixFilter } from "../docker/naming";
import { containerIp, inspectContainer } from "../docker/resources";
import { processStart } from "./cgroup";
import { mapLimit } from "./map-limit";

/** A running pod container as the periodic watch sees it. */
export interface RunningPod {
  name: string;
  container: string;
  /**
   * The container's inspect from when this run of it was first seen: what a run does not change
   * (its id, image, labels, start). Its HostConfig may be older than a resize.
   */
  info: ContainerInspectInfo;
  /** its init process on the host (the cgroup reads go through it) */
  pid: number;
  /** the pod's address on its own network (what the ingress forwards to) */
  ip: string | null;
  /** the preset's web port (the container's label) */
  port: number | null;
  /** from the container's image; null for an image this agent's configuration does not name */
  preset: PresetSlug | null;
  /** ms since the epoch */
  startedAt: number;
}

const INSPECT_CONCURRENCY = 4;

interface Known {
  info: ContainerInspectInfo;
  /** when the kernel started `info.State.Pid`: the same value later means the same run */
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

  async list(): Promise<{ running: RunningPod[]; stopped: string[] }> {
    const { namePrefix } = this.config;
    const list = await this.docker.listContainers({ all: true, filters: prefixFilter(namePrefix) });
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
      const info = await this.runOf(c, names.container);
      if (!info) return null;
      const port = Number(info.Config.Labels?.[LABEL_PORT]);
      return {
        name,
        container: names.container,
        info,
        pid: info.State.Pid,
        // the list's own address is as fresh as the list; the inspect's when the list has none
        ip: c.NetworkSettings?.Networks?.[names.network]?.IPAddress || containerIp(info, names.network),
        port: Number.isInteger(port) && port > 0 ? port : null,
        preset: this.presetOf(info.Config.Image),
        startedAt: Date.parse(info.State.StartedAt),
      };
    });
    for (const id of [...this.known.keys()]) if (!seen.has(id)) this.known.delete(id);
    return { running: found.filter((p): p is RunningPod => p !== null), stopped: stopped.sort() };
  }

  /** The inspect of the container's current run: remembered, or taken now. Null: not running after all. */
  private async runOf(c: ContainerInfo, container: string): Promise<ContainerInspectInfo | null> {
    const known = this.known.get(c.Id);
    if (known && (await processStart(known.info.State.Pid)) === known.pidStart) return known.info;
    this.known.delete(c.Id);
    // Gone or stopped since the list: left out of this tick.
    const info = await inspectContainer(this.docker, container).catch(() => null);
    if (!info?.State.Running || info.State.Restarting) return null;
    const pidStart = await processStart(info.State.Pid);
    // Remembered only when its process can be told apart later (else: inspected every tick, as before).
    if (pidStart !== null && info.Id === c.Id) this.known.set(c.Id, { info, pidStart });
    return info;
  }

  private presetOf(image: string): PresetSlug | null {
    return PRESET_SLUGS.find((p) => this.config.images[p] === image) ?? null;
  }
}

/** One look without memory (every running pod inspected): for a caller that looks once. */
export const listPods = (docker: DockerClient, config: AgentConfig) => new PodLister(docker, config).list();
