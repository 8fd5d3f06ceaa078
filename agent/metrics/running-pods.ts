import type { ContainerInspectInfo } from "dockerode";
import { PRESET_SLUGS, type PresetSlug } from "../../shared/catalog";
import type { AgentConfig } from "../config";
import type { DockerClient } from "../docker/client";
import { LABEL_POD, LABEL_PORT, podNames, prefixFilter } from "../docker/naming";
import { containerIp, inspectContainer } from "../docker/resources";
import { mapLimit } from "./map-limit";

/** A running pod container as the periodic watch sees it: one inspect per pod and tick. */
export interface RunningPod {
  name: string;
  container: string;
  info: ContainerInspectInfo;
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

/**
 * Every container of this agent's prefix that belongs to a pod: the running ones inspected, the
 * others by name only.
 */
export async function listPods(
  docker: DockerClient,
  config: AgentConfig,
): Promise<{ running: RunningPod[]; stopped: string[] }> {
  const list = await docker.listContainers({ all: true, filters: prefixFilter(config.namePrefix) });
  const presetOf = (image: string): PresetSlug | null =>
    PRESET_SLUGS.find((p) => config.images[p] === image) ?? null;
  const stopped: string[] = [];
  const found = await mapLimit(list, INSPECT_CONCURRENCY, async (c): Promise<RunningPod | null> => {
    const name = c.Labels[LABEL_POD];
    if (!name) return null;
    const names = podNames(config.namePrefix, name);
    // Only the pod's own container (a clone's short-lived helper carries the pod label too).
    if (!c.Names.includes(`/${names.container}`)) return null;
    if (c.State !== "running") {
      stopped.push(name);
      return null;
    }
    // Gone or stopped since the list: left out of this tick.
    const info = await inspectContainer(docker, names.container).catch(() => null);
    if (!info?.State.Running || info.State.Restarting) return null;
    const port = Number(info.Config.Labels?.[LABEL_PORT]);
    return {
      name,
      container: names.container,
      info,
      ip: containerIp(info, names.network),
      port: Number.isInteger(port) && port > 0 ? port : null,
      preset: presetOf(info.Config.Image),
      startedAt: Date.parse(info.State.StartedAt),
    };
  });
  return { running: found.filter((p): p is RunningPod => p !== null), stopped: stopped.sort() };
}
