/**
 * One size of bench/scale, up: its Worker on its seeded D1, its simulated agents connected and
 * heartbeating at the real agent's cadence, the CPU of its workerd and of the bench counted per part,
 * and what is measured on it.
 */
import type { PodState } from "../../shared/protocol";
import { fmt } from "../stats";
import { fleetPod, podsOfHost } from "../support/fleet";
import { keepAliveAgent } from "../support/load";
import { descendants, type ProcessReading, pidListeningOn, readProcess } from "../support/sampling";
import { SimAgent } from "../support/sim-agent";
import { type LocalWorker, startLocalWorker } from "../support/worker";
import type { Host, Seeded, Size } from "./seed";
import { CONCURRENCY, CONNECT_PARALLEL, HEARTBEAT_MS, now, undo } from "./settings";

export interface PhaseResult {
  size: Size;
  connectMs: number[];
  connected: number;
  connectErrors: string[];
  connectWallMs: number;
  listP50: number[];
  listP99: number[];
  listRps: number[];
  admittedMs: number[];
  /** p50 of each round's creates */
  admittedRoundP50: number[];
  hostToldMs: number[];
  cadenceRttMs: number[];
  heartbeatsPerSecond: number;
  heartbeatRttMs: number[];
  metrics: {
    sent: number;
    messages: number;
    landed: number;
    offeredPerSecond: number;
    ingestPerSecond: number;
    drainMs: number;
  };
  workerd: {
    pid: number | undefined;
    rssConnectedMb: number;
    rssEndMb: number;
    peakMb: number;
    cpu: Record<"connect" | "api" | "heartbeat" | "metrics", number>;
  };
  benchCpu: Record<"api" | "heartbeat" | "metrics", number>;
  droppedAgents: number;
}

async function workerdPid(worker: LocalWorker): Promise<number | undefined> {
  const port = Number(new URL(worker.directUrl).port);
  const candidates = (await descendants()).filter((p) => p.comm === "workerd").map((p) => p.pid);
  return pidListeningOn(port, candidates);
}

/** Runs `fn` for each item with at most `parallel` in flight. */
async function pool<T>(items: readonly T[], parallel: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(parallel, items.length) }, async () => {
    while (next < items.length) await fn(items[next++] as T);
  });
  await Promise.all(lanes);
}

export function inventoryOf(h: number, size: Size, hosts: readonly Host[]): PodState[] {
  return podsOfHost(h, { pods: size.pods, hosts }).map((i) => {
    const pod = fleetPod(i, { teams: size.teams, hosts });
    return { name: pod.name, state: pod.status, ip: pod.ip };
  });
}

/** CPU seconds and wall seconds of a process over the windows of one part, summed. */
class CpuTally {
  cpuSeconds = 0;
  wallSeconds = 0;
  add(from: ProcessReading | undefined, to: ProcessReading | undefined) {
    if (!from || !to) return;
    this.cpuSeconds += to.cpuSeconds - from.cpuSeconds;
    this.wallSeconds += (to.at - from.at) / 1000;
  }
  /** percent of one core */
  get percent() {
    return this.wallSeconds > 0 ? (this.cpuSeconds / this.wallSeconds) * 100 : Number.NaN;
  }
}

/** The bench process's own CPU over the same windows. */
class SelfTally {
  private micros = 0;
  private wallMs = 0;
  async around<T>(fn: () => Promise<T>): Promise<T> {
    const from = process.cpuUsage();
    const t = now();
    try {
      return await fn();
    } finally {
      const used = process.cpuUsage(from);
      this.micros += used.user + used.system;
      this.wallMs += now() - t;
    }
  }
  get percent() {
    return this.wallMs > 0 ? (this.micros / 1000 / this.wallMs) * 100 : Number.NaN;
  }
}

/** One size, up: its Worker, its agents connected and heartbeating, and what is measured on it. */
export interface Stand {
  size: Size;
  seeded: Seeded;
  worker: LocalWorker;
  base: string;
  pid: number | undefined;
  agents: SimAgent[];
  timers: NodeJS.Timeout[];
  commandAt: Map<string, number>;
  http: ReturnType<typeof keepAliveAgent>;
  creates: number;
  recordCadence: boolean;
  cpu: Record<"connect" | "api" | "heartbeat" | "metrics", CpuTally>;
  self: Record<"api" | "heartbeat" | "metrics", SelfTally>;
  result: PhaseResult;
}

export const readWorkerd = async (stand: Pick<Stand, "pid">): Promise<ProcessReading | undefined> =>
  stand.pid === undefined ? undefined : readProcess(stand.pid).catch(() => undefined);

/** Runs `fn` as part `part` of `stand`: its workerd's CPU and the bench's own are counted for the part. */
export async function measured<T>(
  stand: Stand,
  part: "api" | "heartbeat" | "metrics",
  fn: () => Promise<T>,
): Promise<T> {
  const from = await readWorkerd(stand);
  try {
    return await stand.self[part].around(fn);
  } finally {
    stand.cpu[part].add(from, await readWorkerd(stand));
  }
}

export async function bringUp(size: Size, seeded: Seeded, hosts: readonly Host[]): Promise<Stand> {
  const worker = await startLocalWorker({ persistDir: seeded.dir });
  const stopWorker = () => worker.stop();
  undo.add(stopWorker);
  const base = worker.directUrl;
  const pid = await workerdPid(worker);
  if (pid === undefined)
    console.warn("  could not find the Worker's workerd process: no memory or CPU figures");
  console.log(
    `  ${size.label}: worker ${base} (workerd pid ${pid ?? "?"}), start ${fmt(worker.timings.startMs, 0)} ms`,
  );
  const stand: Stand = {
    size,
    seeded,
    worker,
    base,
    pid,
    agents: [],
    timers: [],
    commandAt: new Map(),
    http: keepAliveAgent(CONCURRENCY + 1),
    creates: 0,
    recordCadence: false,
    cpu: { connect: new CpuTally(), api: new CpuTally(), heartbeat: new CpuTally(), metrics: new CpuTally() },
    self: { api: new SelfTally(), heartbeat: new SelfTally(), metrics: new SelfTally() },
    result: {
      size,
      connectMs: [],
      connected: 0,
      connectErrors: [],
      connectWallMs: 0,
      listP50: [],
      listP99: [],
      listRps: [],
      admittedMs: [],
      admittedRoundP50: [],
      hostToldMs: [],
      cadenceRttMs: [],
      heartbeatsPerSecond: 0,
      heartbeatRttMs: [],
      metrics: { sent: 0, messages: 0, landed: 0, offeredPerSecond: 0, ingestPerSecond: 0, drainMs: 0 },
      workerd: {
        pid,
        rssConnectedMb: Number.NaN,
        rssEndMb: Number.NaN,
        peakMb: Number.NaN,
        cpu: { connect: Number.NaN, api: Number.NaN, heartbeat: Number.NaN, metrics: Number.NaN },
      },
      benchCpu: { api: Number.NaN, heartbeat: Number.NaN, metrics: Number.NaN },
      droppedAgents: 0,
    },
  };
  stands.add(stand);

  // connect: every agent dials, says hello, and waits for the welcome
  const wsUrl = `${base.replace(/^http/, "ws")}/agent/connect`;
  for (let h = 0; h < hosts.length; h++) {
    stand.agents.push(
      new SimAgent({
        url: wsUrl,
        token: (hosts[h] as Host).token,
        inventory: inventoryOf(h, size, hosts),
        onCall: (op, params) => {
          const name = (params as { name?: unknown } | undefined)?.name;
          if (op === "pod.create" && typeof name === "string") stand.commandAt.set(name, now());
        },
      }),
    );
  }
  const r = stand.result;
  const c0 = await readWorkerd(stand);
  const started = now();
  await pool(stand.agents, CONNECT_PARALLEL, async (agent) => {
    try {
      r.connectMs.push(await agent.connect());
    } catch (err) {
      r.connectErrors.push(err instanceof Error ? err.message : String(err));
    }
  });
  r.connectWallMs = now() - started;
  const c1 = await readWorkerd(stand);
  stand.cpu.connect.add(c0, c1);
  r.workerd.rssConnectedMb = (c1?.rssKb ?? Number.NaN) / 1024;
  r.connected = stand.agents.filter((a) => a.open).length;
  console.log(
    `  ${size.label}: ${r.connected} of ${stand.agents.length} agents connected in ${fmt(r.connectWallMs / 1000, 1)} s` +
      (r.connectErrors.length ? `; ${r.connectErrors.length} failed, e.g. ${r.connectErrors[0]}` : ""),
  );

  // heartbeats at the real agent's cadence from here on, each agent at its own phase
  for (const agent of stand.agents.filter((a) => a.open)) {
    const beat = () => {
      void agent.ping().then((ms) => {
        if (stand.recordCadence && !Number.isNaN(ms)) r.cadenceRttMs.push(ms);
      });
    };
    stand.timers.push(
      setTimeout(() => {
        beat();
        stand.timers.push(setInterval(beat, HEARTBEAT_MS));
      }, Math.random() * HEARTBEAT_MS),
    );
  }
  return stand;
}

export const stands = new Set<Stand>();

export async function tearDown(stand: Stand) {
  for (const t of stand.timers) clearTimeout(t);
  stand.http.destroy();
  stand.result.droppedAgents = stand.agents.filter((a) => a.dropped).length;
  await Promise.all(stand.agents.map((a) => a.close()));
  await stand.worker.stop();
  stands.delete(stand);
}
