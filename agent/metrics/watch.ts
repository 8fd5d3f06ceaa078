import type { AgentHealthMessage, AgentMetricsMessage, AgentServicesMessage } from "../../shared/protocol";
import type { AgentConfig } from "../config";
import type { DockerClient } from "../docker/client";
import type { HealthMonitor } from "../health/monitor";
import type { Logger } from "../logger";
import type { SidecarReporter } from "../services/reports";
import { PodLister } from "./running-pods";
import { MetricsSampler } from "./sampler";

export interface PodWatchOptions {
  config: AgentConfig;
  docker: DockerClient;
  log: Logger;
  monitor: HealthMonitor;
  /** the running pods' database sidecars (agent:services, changes only) */
  sidecars: SidecarReporter;
  /** ships a message; false when it could not go out (no connection) */
  send: (message: AgentMetricsMessage | AgentHealthMessage | AgentServicesMessage) => boolean;
  /** a command is working on the pod right now: its app is not judged this tick */
  busy?: (pod: string) => boolean;
}

/** per message: well inside the protocol's limit and a D1 batch */
const BATCH = 500;
const chunks = <T>(items: T[]): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += BATCH) out.push(items.slice(i, i + BATCH));
  return out;
};

/** storage (a `du` per pod) is measured on every this many ticks */
export const STORAGE_EVERY_TICKS = 10;

/**
 * The agent's periodic look at its pods, every `config.metricsIntervalMs`: one container list
 * (an inspect only for a pod that started since the last look), one pass over the pods' cgroup files
 * for the metrics sample (agent:metrics), the app health check (agent:health, changes only) and the
 * database sidecars' states read off the same list (agent:services, changes only): no
 * engine call per pod and tick, so an idle host's work does not grow with its pods. It runs beside the command dispatcher and never holds a pod's
 * lock; a tick that overruns the interval makes the next one wait instead of piling up.
 */
export function startPodWatch(options: PodWatchOptions) {
  const { config, docker, log, monitor } = options;
  const intervalMs = config.metricsIntervalMs;
  const lister = new PodLister(docker, config);
  const sampler = new MetricsSampler({ docker, log, storageEveryMs: intervalMs * STORAGE_EVERY_TICKS });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const tick = async () => {
    const { running: pods, stopped: down, sidecars } = await lister.list();
    const samples = await sampler.sample(pods);
    for (const batch of chunks(samples)) options.send({ type: "agent:metrics", samples: batch });
    const reports = await monitor.check(pods, down, options.busy);
    // Committed only when every part went out: otherwise the next tick says it all again.
    if (chunks(reports).every((batch) => options.send({ type: "agent:health", pods: batch }))) {
      monitor.commit(reports);
    }
    const lists = options.sidecars.check(sidecars, options.busy);
    if (chunks(lists).every((batch) => options.send({ type: "agent:services", pods: batch }))) {
      options.sidecars.commit(lists);
    }
  };

  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      const started = Date.now();
      running = tick()
        .catch((error: unknown) => log.warn("pod watch tick failed", { error: String(error) }))
        .finally(() => {
          running = undefined;
          schedule(Math.max(0, intervalMs - (Date.now() - started)));
        });
    }, delay);
    timer.unref();
  };
  // The first look soon after start: a baseline for the CPU and network deltas.
  schedule(Math.min(intervalMs, 5_000));

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
