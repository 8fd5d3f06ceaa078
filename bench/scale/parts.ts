/**
 * bench/scale's parts 2.–4. on one size: the API rounds (`GET /api/pods` and creates until admitted and
 * until the host is told), the heartbeat ingest in a closed loop, the metrics ingest until every sample
 * landed; and the figures read at the end.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { MetricSample } from "../../shared/protocol";
import { median } from "../stats";
import { FLEET_REGION } from "../support/fleet";
import { runLoad } from "../support/load";
import { countRows, type Host } from "./seed";
import {
  CONCURRENCY,
  CREATES,
  METRICS_BATCH,
  METRICS_MS,
  METRICS_SECONDS,
  METRICS_SPEED,
  now,
  REQUESTS,
} from "./settings";
import { inventoryOf, measured, readWorkerd, type Stand } from "./stand";

/** One round of `GET /api/pods`: `--requests` by `--concurrency` clients, each as the next owner. */
export async function listRound(stand: Stand, round: number) {
  const tokens = stand.seeded.tokens;
  const res = await measured(stand, "api", () =>
    runLoad({
      url: `${stand.base}/api/pods`,
      headers: (i) => ({ authorization: `Bearer ${tokens[(round * REQUESTS + i) % tokens.length]}` }),
      requests: REQUESTS,
      concurrency: CONCURRENCY,
      agent: stand.http,
    }),
  );
  if (res.failures > 0) throw new Error(`GET /api/pods failed: ${JSON.stringify(res.firstFailure)}`);
  return res;
}

/** One create until its 202 (admitted), then until the Workflow's `pod.create` reached the host. */
export async function createOne(stand: Stand): Promise<{ admitted: number; told: number }> {
  const n = stand.creates++;
  const name = `new-${stand.size.pods}-${n}`;
  const token = stand.seeded.tokens[(n * 7) % stand.seeded.tokens.length];
  const started = now();
  const res = await fetch(`${stand.base}/api/pods`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      // a new client address every 40 creates: the per-IP limit (50 an hour) is not what is measured
      "cf-connecting-ip": `198.18.0.${Math.floor(n / 40) + 1}`,
    },
    body: JSON.stringify({ name, preset: "static", plan_slug: "launch", region: FLEET_REGION }),
  });
  const admitted = now() - started;
  const body = await res.text();
  if (res.status !== 202) throw new Error(`POST /api/pods: ${res.status} ${body}`);
  for (const deadline = now() + 30_000; !stand.commandAt.has(name); await sleep(2)) {
    if (now() > deadline) throw new Error(`pod.create for ${name} never reached its host`);
  }
  return { admitted, told: (stand.commandAt.get(name) ?? Number.NaN) - started };
}

export async function createRound(stand: Stand) {
  const round: number[] = [];
  await measured(stand, "api", async () => {
    for (let c = 0; c < CREATES; c++) {
      const { admitted, told } = await createOne(stand);
      round.push(admitted);
      stand.result.admittedMs.push(admitted);
      stand.result.hostToldMs.push(told);
    }
  });
  stand.result.admittedRoundP50.push(median(round));
}

/**
 * Every agent pings again as soon as its pong is back, for `seconds`; counted are the pongs back
 * within the window (the ones still in flight at its end are not, nor is the window's tail). One
 * ping each first, uncounted: it wakes the objects that hibernation evicted meanwhile (a heartbeat
 * at cadence pays that, see the cadence figure).
 */
export async function heartbeatWindow(stand: Stand, seconds: number) {
  const live = stand.agents.filter((a) => a.open);
  await Promise.all(live.map((a) => a.ping()));
  let count = 0;
  await measured(stand, "heartbeat", async () => {
    const end = now() + seconds * 1000;
    await Promise.all(
      live.map(async (agent) => {
        while (now() < end && agent.open) {
          const ms = await agent.ping();
          if (Number.isNaN(ms) || now() > end) continue;
          stand.result.heartbeatRttMs.push(ms);
          count++;
        }
      }),
    );
  });
  return { count, elapsed: seconds * 1000 };
}

/**
 * Every agent sends its running pods' samples every 60 s / `--metrics-speed` for `--metrics-seconds`;
 * then the rows are counted until all have landed.
 */
export async function metricsWindow(stand: Stand, hosts: readonly Host[]) {
  const m = stand.result.metrics;
  await measured(stand, "metrics", async () => {
    const before = await countRows(stand.seeded.dir, "pod_metrics");
    const intervalMs = METRICS_MS / METRICS_SPEED;
    const start = now();
    const end = start + METRICS_SECONDS * 1000;
    await Promise.all(
      stand.agents.map(async (agent, h) => {
        if (!agent.open || h >= hosts.length) return;
        const running = inventoryOf(h, stand.size, hosts).filter((p) => p.state === "running");
        let tick = 0;
        for (let at = start + Math.random() * intervalMs; at < end; at += intervalMs) {
          await sleep(Math.max(0, at - now()));
          if (!agent.open) return;
          const stamp = Date.now();
          const samples: MetricSample[] = running.map((p, k) => ({
            name: p.name,
            at: stamp,
            cpu: ((h + k + tick) % 100) / 2,
            memory: ((h * 7 + k) % 100) / 2,
            storage: 1_000_000 + k,
            netIn: 1000 * tick,
            netOut: 500 * tick,
          }));
          for (let i = 0; i < samples.length; i += METRICS_BATCH) {
            agent.sendMetrics(samples.slice(i, i + METRICS_BATCH));
            m.messages++;
          }
          m.sent += samples.length;
          tick++;
        }
      }),
    );
    const lastSent = now();
    let landed = (await countRows(stand.seeded.dir, "pod_metrics")) - before;
    let lastLanded = now();
    for (const deadline = now() + 120_000; landed < m.sent && now() < deadline; ) {
      await sleep(250);
      const rows = (await countRows(stand.seeded.dir, "pod_metrics")) - before;
      if (rows !== landed) lastLanded = now();
      landed = rows;
    }
    m.landed = landed;
    m.offeredPerSecond = (m.sent / (lastSent - start)) * 1000;
    m.ingestPerSecond = (landed / (Math.max(lastLanded, lastSent) - start)) * 1000;
    m.drainMs = Math.max(0, lastLanded - lastSent);
  });
}

/** The figures of a stand that are read at the end. */
export async function finish(stand: Stand) {
  const r = stand.result;
  const end = await readWorkerd(stand);
  r.workerd.rssEndMb = (end?.rssKb ?? Number.NaN) / 1024;
  r.workerd.peakMb = (end?.hwmKb ?? Number.NaN) / 1024;
  for (const part of ["connect", "api", "heartbeat", "metrics"] as const)
    r.workerd.cpu[part] = stand.cpu[part].percent;
  for (const part of ["api", "heartbeat", "metrics"] as const) r.benchCpu[part] = stand.self[part].percent;
}
