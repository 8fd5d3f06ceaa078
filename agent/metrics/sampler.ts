import type { ContainerInspectInfo, ContainerStats } from "dockerode";
import type { MetricSample } from "../../shared/protocol";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { HOME } from "../docker/naming";
import { DU, TIMEOUT } from "../docker/pod-bin";
import type { Logger } from "../logger";
import { type CgroupReading, readContainerCgroup } from "./cgroup";
import { mapLimit } from "./map-limit";
import type { RunningPod } from "./running-pods";

/**
 * Resource use of running pods, one sample per pod and tick, each a share of the pod's OWN plan:
 * - CPU: the container's cumulative CPU time (its cgroup's counter, ns), as a delta against the
 *   previous tick's read over the wall time between them, divided by the plan's CPUs (the cgroup's
 *   CFS quota, which the engine sets from `NanoCpus`). A container seen for the first time (or
 *   restarted since) is averaged since its start instead.
 * - memory: usage minus the inactive page cache (what `docker stats` shows), over the limit.
 * - network: bytes received/sent since the previous tick (counter deltas). A restart resets the
 *   counters: the bytes since the restart are this interval's, never a negative delta.
 * - storage: `du` of the home volume, as pod_user inside the pod (its own cgroup pays for it).
 *   It is costly, so each pod's figure is refreshed only every `storageEveryMs` (jittered so the
 *   pods of a host do not all walk their disks on the same tick), the cached figure in between.
 *
 * The counters come from the kernel in one pass over the pods' cgroup files (./cgroup.ts), the
 * files the engine itself reads for a stats call: no engine call per pod and tick, so an idle host's
 * work does not grow with its pods. A pod whose files cannot be read (a cgroup layout this code does
 * not know) is asked of the engine instead, with a one-shot stats read and an inspect for its
 * plan, as before; a pod whose read fails both ways is left out of this tick.
 */

export interface SamplerOptions {
  docker: DockerClient;
  log: Logger;
  /** how often each pod's storage is measured again (0: every tick) */
  storageEveryMs: number;
}

interface Previous {
  startedAt: number;
  readAt: number;
  cpuNs: number;
  rx: number;
  tx: number;
}

const STATS_CONCURRENCY = 4;
const DU_CONCURRENCY = 2;
const DU_TIMEOUT_S = 60;

export class MetricsSampler {
  private readonly previous = new Map<string, Previous>();
  private readonly storage = new Map<string, { bytes: number; dueAt: number }>();
  private cgroupsFailed = false;

  constructor(private readonly options: SamplerOptions) {}

  async sample(pods: readonly RunningPod[], now = Date.now()): Promise<MetricSample[]> {
    const live = new Set(pods.map((p) => p.name));
    for (const name of [...this.previous.keys()]) if (!live.has(name)) this.previous.delete(name);
    for (const name of [...this.storage.keys()]) if (!live.has(name)) this.storage.delete(name);

    const due = pods.filter((p) => (this.storage.get(p.name)?.dueAt ?? 0) <= now);
    const [readings] = await Promise.all([
      this.readAll(pods),
      mapLimit(due, DU_CONCURRENCY, (pod) => this.measureStorage(pod, now)),
    ]);
    return readings.flatMap((reading, i) => {
      const pod = pods[i];
      if (!reading || !pod) return [];
      const { sample, state } = sampleOf(this.previous.get(pod.name), reading, pod.startedAt);
      this.previous.set(pod.name, state);
      return [{ name: pod.name, ...sample, storage: this.storage.get(pod.name)?.bytes ?? 0 }];
    });
  }

  /** Every pod's counters from its cgroup files; the engine's stats for those that cannot be read. */
  private async readAll(pods: readonly RunningPod[]): Promise<(Reading | null)[]> {
    const readings: (Reading | null)[] = [];
    for (const pod of pods) {
      readings.push(
        await readContainerCgroup(pod.pid, pod.id).catch((error: unknown) => {
          // said once: on a host whose cgroup layout this code does not know it would be every pod and tick
          // (a pod that stopped since the list lands here too, and its stats read then says why)
          if (!this.cgroupsFailed) {
            this.cgroupsFailed = true;
            this.options.log.warn(
              "a pod's cgroup files could not be read: its metrics from the engine's stats",
              {
                pod: pod.name,
                error: String(error),
              },
            );
          }
          return null;
        }),
      );
      // the files are read in place (./kernel-file.ts): other work runs between two pods' reads
      await new Promise((resolve) => setImmediate(resolve));
    }
    const missing = pods.flatMap((pod, i) => (readings[i] ? [] : [{ pod, i }]));
    await mapLimit(missing, STATS_CONCURRENCY, async ({ pod, i }) => {
      readings[i] = await this.readStats(pod);
    });
    return readings;
  }

  private async readStats(pod: RunningPod): Promise<Reading | null> {
    try {
      const container = this.options.docker.getContainer(pod.container);
      // the inspect for the plan's CPUs and memory now: a resize changes them in place
      const [stats, info] = await Promise.all([
        container.stats({ stream: false, "one-shot": true }),
        container.inspect(),
      ]);
      return readingOf(stats, info);
    } catch (error) {
      this.options.log.warn("stats read failed", { pod: pod.name, error: String(error) });
      return null;
    }
  }

  private async measureStorage(pod: RunningPod, now: number): Promise<void> {
    const jitter = 0.75 + Math.random() * 0.5;
    try {
      const r = await execInContainer(
        this.options.docker,
        pod.container,
        [TIMEOUT, String(DU_TIMEOUT_S), DU, "-s", "-B1", "-x", HOME],
        { workingDir: HOME, maxOutputBytes: 4096, signal: AbortSignal.timeout((DU_TIMEOUT_S + 10) * 1000) },
      );
      // du exits 1 when some file could not be read (the user's chmod 000) but still prints a total.
      const bytes = Number(/^(\d+)\s/.exec(r.stdout)?.[1]);
      if (!Number.isSafeInteger(bytes)) throw new Error(`du exited ${r.exitCode}: ${r.stderr.slice(0, 200)}`);
      this.storage.set(pod.name, { bytes, dueAt: now + this.options.storageEveryMs * jitter });
    } catch (error) {
      this.options.log.warn("storage measurement failed", { pod: pod.name, error: String(error) });
      // Keep the last figure; try again a little later.
      const last = this.storage.get(pod.name);
      this.storage.set(pod.name, {
        bytes: last?.bytes ?? 0,
        dueAt: now + (this.options.storageEveryMs * jitter) / 4,
      });
    }
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const clampPercent = (n: number) => (Number.isFinite(n) ? Math.min(100, Math.max(0, round2(n))) : 0);

/** The plan's CPUs: NanoCpus as the agent sets them, else a CFS quota, else every CPU of the host. */
export function allocatedCpus(info: ContainerInspectInfo, stats: ContainerStats): number {
  const host = info.HostConfig as { NanoCpus?: number; CpuQuota?: number; CpuPeriod?: number };
  if (host.NanoCpus && host.NanoCpus > 0) return host.NanoCpus / 1e9;
  if (host.CpuQuota && host.CpuQuota > 0 && host.CpuPeriod) return host.CpuQuota / host.CpuPeriod;
  return stats.cpu_stats.online_cpus || 1;
}

/** What one sample is computed from, whichever way it was read (the cgroup files or the engine). */
export type Reading = CgroupReading;

/** A one-shot stats read and the container's inspect, as a Reading. */
export function readingOf(stats: ContainerStats, info: ContainerInspectInfo): Reading {
  let rx = 0;
  let tx = 0;
  for (const n of Object.values(stats.networks ?? {})) {
    rx += n.rx_bytes ?? 0;
    tx += n.tx_bytes ?? 0;
  }
  const mem = stats.memory_stats ?? { usage: 0, limit: 0, stats: {} };
  const cache = mem.stats?.total_inactive_file ?? mem.stats?.inactive_file ?? 0;
  return {
    readAt: Date.parse(stats.read) || Date.now(),
    cpuNs: stats.cpu_stats?.cpu_usage?.total_usage ?? 0,
    cpus: allocatedCpus(info, stats),
    memoryUsed: Math.max(0, (mem.usage ?? 0) - cache),
    memoryLimit: (info.HostConfig as { Memory?: number }).Memory || mem.limit || 0,
    rx,
    tx,
  };
}

/**
 * One sample from a one-shot stats read and the previous tick's state (pure: tested directly).
 * `startedAt` tells a restart apart (its counters start again at zero).
 */
export const computeSample = (
  previous: Previous | undefined,
  stats: ContainerStats,
  info: ContainerInspectInfo,
  startedAt: number,
) => sampleOf(previous, readingOf(stats, info), startedAt);

/** One sample from a reading and the previous tick's state (pure). */
export function sampleOf(
  previous: Previous | undefined,
  reading: Reading,
  startedAt: number,
): { sample: Omit<MetricSample, "storage" | "name">; state: Previous } {
  const { readAt, cpuNs, rx, tx, cpus } = reading;
  // The same run of the container, and its counters moved forward: deltas. Otherwise the counters
  // restarted with the container, and everything in them belongs to this run.
  const sameRun =
    previous !== undefined &&
    previous.startedAt === startedAt &&
    cpuNs >= previous.cpuNs &&
    readAt > previous.readAt;
  const since = sameRun ? previous.readAt : startedAt;
  const wallNs = Math.max(1, readAt - since) * 1e6;
  const cpu = ((sameRun ? cpuNs - previous.cpuNs : cpuNs) / (wallNs * cpus)) * 100;

  // A container the agent had not seen before and that started long ago: its counters hold all of
  // its life, not an interval; report nothing rather than days of traffic as one interval.
  const firstLook = previous === undefined;
  const net = (now: number, before: number | undefined) => {
    if (sameRun && before !== undefined && now >= before) return now - before;
    if (firstLook && readAt - startedAt > 5 * 60_000) return 0;
    return now;
  };

  const limit = reading.memoryLimit;
  return {
    sample: {
      at: readAt,
      cpu: clampPercent(cpu),
      memory: limit > 0 ? clampPercent((reading.memoryUsed / limit) * 100) : 0,
      netIn: net(rx, previous?.rx),
      netOut: net(tx, previous?.tx),
    },
    state: { startedAt, readAt, cpuNs, rx, tx },
  };
}
