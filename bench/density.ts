/**
 * Density bench (issue #17 item 5): static pods on one host until the machine says no, on the real
 * stack (Worker in workerd + registered host + the compiled agent + Docker engine + nginx ingress).
 *
 *   tsx bench/density.ts [--max 320] [--batch 10] [--probes 5] [--idle-s 60] [--interval-s 60]
 *                        [--list-reps 20] [--min-available-mb 4096] [--keep-networks 16]
 *
 * 1. Registered capacity: the host is registered with the machine's own CPUs, memory and disk, and
 *    static (launch) pods are created through the API until placement answers 503; which of the
 *    three ran out is reported. An operator who hosts idle static sites overcommits (a launch plan
 *    reserves a whole CPU and 512 MB): the capacity is then raised to hold `--max` pods, and the
 *    filling goes on until one of: `--max`; placement or a create failing (the pod's own error is
 *    shown); the machine running low on memory (MemAvailable under `--min-available-mb` plus the
 *    next batch's estimate: the machine has no swap and is shared, so it stops well before the
 *    kernel would have to kill anything); or the engine's address pools for pod networks (each pod
 *    has its own bridge network) leaving fewer than `--keep-networks` networks for other work.
 * 2. At 50, 200 and the largest count reached:
 *    - create: `--probes` pods made one at a time, POST until the pod list says running, beside the
 *      same container made with bare dockerode (network, volume, create, start, web port answers:
 *      the agent's own create options), interleaved.
 *    - list: `GET /api/pods` (the default page of 20, and `?limit=100`), `--list-reps` times, beside
 *      a dockerode list of the same containers (the floor) and `docker ps` (context).
 *    - memory per pod: the pods' cgroup memory (usage less inactive page cache, as `docker stats`)
 *      summed over the pods, over their count; beside the floor containers' (same image, bare); and
 *      the drop in the host's MemAvailable since the start, per pod (what a pod costs the machine,
 *      containerd's shim, the bridge and the kernel included).
 *    - the agent at idle over `--idle-s` (after the last create settled): its CPU (utime + stime of
 *      the agent and its reaped children, as a share of one core) and its RSS (largest of readings
 *      every 5 s), beside the same agent on the empty host (the floor for CPU; a bare idle `node`
 *      with the agent's flags for RSS). The agent samples its pods every `--interval-s`
 *      (PODHOST_METRICS_INTERVAL_S, production's 60 s by default): with the defaults every idle
 *      window holds one whole metrics and health tick. The engine's (dockerd's) CPU over the same
 *      window is shown for context (other work on the machine uses the engine too).
 *
 * Targets (issue #17): ≥ 300 idle static pods on this machine, and the agent under 2% CPU at idle at
 * the largest count. Prints MET / NOT MET and exits non-zero when a target is missed. Every pod,
 * container, network, volume and pod disk the bench made is removed at the end, also on failure or
 * Ctrl-C; the bench touches only objects under its own name prefix.
 */
import { execFile, spawn } from "node:child_process";
import { readFile, statfs } from "node:fs/promises";
import http from "node:http";
import { cpus as hostCpus } from "node:os";
import { parseArgs, promisify } from "node:util";
import { loadConfig } from "../agent/config";
import { createDockerClient, type DockerClient } from "../agent/docker/client";
import { containerCreateOptions } from "../agent/docker/container-spec";
import { HOME, podLabels, podNames, prefixFilter } from "../agent/docker/naming";
import { specFileEntries } from "../agent/docker/spec-files";
import { buildTar } from "../agent/docker/tar";
import { readContainerCgroup } from "../agent/metrics/cgroup";
import { AGENT_NODE_FLAGS } from "../scripts/build-agent";
import { d1Execute } from "../scripts/lib/d1";
import { findPlan, type Plan } from "../shared/catalog";
import { type ApiClient, signUp } from "../test/e2e/support/api";
import { waitForHostOnline } from "../test/e2e/support/pods";
import { type Stack, sleep, startStack } from "../test/e2e/support/stack";
import { podSpec } from "../worker/services/pods/spec";
import { fmt, formatTable, median } from "./stats";
import { positiveInt } from "./support/args";
import { removePrefixed } from "./support/floor-cleanup";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = { pods: 300, agentCpuPercent: 2 };
const v = verdicts("density");
const CHECKPOINTS = [50, 200];
const IMAGE = "podhost/static:latest";
const POLL_MS = 20;
/** what the next batch is assumed to take of MemAvailable before it is made (a static pod is ~15–25 MB) */
const MB_PER_POD_ESTIMATE = 64;

const { values: args } = parseArgs({
  options: {
    max: { type: "string", default: "320" },
    batch: { type: "string", default: "10" },
    probes: { type: "string", default: "5" },
    "idle-s": { type: "string", default: "60" },
    "interval-s": { type: "string", default: "60" },
    "list-reps": { type: "string", default: "20" },
    "min-available-mb": { type: "string", default: "4096" },
    "keep-networks": { type: "string", default: "16" },
  },
});
const MAX = positiveInt("max", args.max);
const BATCH = positiveInt("batch", args.batch);
const PROBES = positiveInt("probes", args.probes);
const IDLE_S = positiveInt("idle-s", args["idle-s"]);
const INTERVAL_S = positiveInt("interval-s", args["interval-s"]);
const LIST_REPS = positiveInt("list-reps", args["list-reps"]);
const MIN_AVAILABLE_MB = positiveInt("min-available-mb", args["min-available-mb"]);
const KEEP_NETWORKS = positiveInt("keep-networks", args["keep-networks"]);

const run = promisify(execFile);
const docker: DockerClient = createDockerClient("/var/run/docker.sock");
const now = () => performance.now();
const MB = 1024 * 1024;

// --------------------------------------------------------------------------------------- the machine

async function meminfoMb(field: string): Promise<number> {
  const text = await readFile("/proc/meminfo", "utf8");
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) / 1024;
}

/** utime + stime of a process and of its reaped children, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const f = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  // fields 14–17 of stat(5): utime stime cutime cstime, in clock ticks (USER_HZ, 100 on Linux)
  return ((f[11] ?? 0) + (f[12] ?? 0) + (f[13] ?? 0) + (f[14] ?? 0)) / 100;
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) / 1024;
}

const dockerdPid = async () =>
  Number((await readFile("/var/run/docker.pid", "utf8").catch(() => "0")).trim());

interface Idle {
  cpuPercent: number;
  dockerdPercent: number;
  rssMb: number;
}

/** The agent left alone for `IDLE_S`: its CPU as a share of one core, its largest RSS reading. */
async function idleWindow(agentPid: number): Promise<Idle> {
  const enginePid = await dockerdPid();
  const t0 = now();
  const [a0, d0] = await Promise.all([cpuSeconds(agentPid), enginePid ? cpuSeconds(enginePid) : 0]);
  const readings: number[] = [];
  while (now() - t0 < IDLE_S * 1000) {
    readings.push(await rssMb(agentPid));
    await sleep(Math.min(5_000, IDLE_S * 1000 - (now() - t0)));
  }
  const [a1, d1] = await Promise.all([cpuSeconds(agentPid), enginePid ? cpuSeconds(enginePid) : 0]);
  const wall = (now() - t0) / 1000;
  return {
    cpuPercent: ((a1 - a0) / wall) * 100,
    dockerdPercent: ((d1 - d0) / wall) * 100,
    rssMb: Math.max(...readings, await rssMb(agentPid)),
  };
}

/** A bare node with the agent's flags, idle: its RSS after a second. */
async function bareNodeRss(): Promise<number> {
  const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, "-e", "setInterval(() => {}, 1000)"], {
    stdio: "ignore",
  });
  await sleep(1_000);
  const mb = await rssMb(child.pid ?? 0);
  child.kill("SIGTERM");
  return mb;
}

// ------------------------------------------------------------------------ the engine's address pools

interface Pool {
  base: number;
  baseBits: number;
  size: number;
}

const ipv4 = (s: string) => s.split(".").reduce((n, part) => n * 256 + Number(part), 0);
const cidr = (s: string): [number, number] => {
  const [addr = "", bits = "32"] = s.split("/");
  return [ipv4(addr), Number(bits)];
};

/** The engine's default address pools (daemon.json), else Docker's built-in ones. */
async function addressPools(): Promise<Pool[]> {
  const raw = await readFile("/etc/docker/daemon.json", "utf8").catch(() => "{}");
  const configured = (JSON.parse(raw) as { "default-address-pools"?: { base: string; size: number }[] })[
    "default-address-pools"
  ];
  const pools = configured ?? [
    { base: "172.17.0.0/12", size: 16 },
    { base: "192.168.0.0/16", size: 20 },
  ];
  return pools.map((p) => {
    const [base, baseBits] = cidr(p.base);
    return { base, baseBits, size: p.size };
  });
}

/** How many more networks the pools can give: their size less the subnets in them that are taken. */
async function networksLeft(pools: Pool[]): Promise<number> {
  const subnets = (await docker.listNetworks()).flatMap((n) =>
    (n.IPAM?.Config ?? []).map((c) => c.Subnet).filter((s): s is string => !!s && s.includes(".")),
  );
  let left = 0;
  for (const p of pools) {
    const mask = p.baseBits === 0 ? 0 : (0xffffffff << (32 - p.baseBits)) >>> 0;
    const inPool = subnets.filter((s) => (cidr(s)[0] & mask) >>> 0 === (p.base & mask) >>> 0).length;
    left += Math.max(0, 2 ** (p.size - p.baseBits) - inPool);
  }
  return left;
}

// ------------------------------------------------------------------------------- host capacity (D1)

interface HostRow {
  cpu: number;
  memory_mb: number;
  disk_gb: number;
  allocated_cpu: number;
  allocated_memory_mb: number;
  allocated_disk_gb: number;
}

const setCapacity = (stack: Stack, cpu: number, memoryMb: number, diskGb: number) =>
  d1Execute(
    `UPDATE hosts SET cpu = ${cpu}, memory_mb = ${memoryMb}, disk_gb = ${diskGb} WHERE id = '${stack.hostId}'`,
    { persistTo: stack.worker.persistDir },
  );

async function hostRow(stack: Stack): Promise<HostRow> {
  const [row] = await d1Execute<HostRow>(
    `SELECT cpu, memory_mb, disk_gb, allocated_cpu, allocated_memory_mb, allocated_disk_gb FROM hosts WHERE id = '${stack.hostId}'`,
    { persistTo: stack.worker.persistDir },
  );
  if (!row) throw new Error("the bench host's row is gone");
  return row;
}

/** Which of the registered resources has no room left for another pod of `plan`. */
const exhausted = (h: HostRow, plan: Plan) =>
  [
    h.cpu - h.allocated_cpu < plan.cpu ? `cpu (${h.allocated_cpu} of ${h.cpu} allocated)` : "",
    h.memory_mb - h.allocated_memory_mb < plan.memoryMb
      ? `memory (${h.allocated_memory_mb} of ${h.memory_mb} MB allocated)`
      : "",
    h.disk_gb - h.allocated_disk_gb < plan.diskGb
      ? `disk (${h.allocated_disk_gb} of ${h.disk_gb} GB allocated)`
      : "",
  ]
    .filter(Boolean)
    .join(", ") || "none of cpu, memory, disk";

// ------------------------------------------------------------------------------------ pods, ours

interface PodList {
  total: number;
  status_counts: Record<string, number>;
  pods: { name: string; status: string }[];
}

/** POSTs the pods; null when all were accepted, else why not (status and message). */
async function post(api: ApiClient, names: string[]): Promise<string | null> {
  for (const name of names) {
    const res = await api.post("/api/pods", { name, preset: "static" });
    if (res.status !== 202)
      return `POST /api/pods ${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
  }
  return null;
}

/** Until `expected` pods are running (the list's counts, from D1); throws on a pod in `error`. */
async function allRunning(api: ApiClient, expected: number, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api.get<PodList>("/api/pods?limit=1");
    const counts = res.body?.status_counts ?? {};
    if ((counts.error ?? 0) > 0) {
      const failed = await api.get<PodList>("/api/pods?limit=100");
      const pod = failed.body.pods.find((p) => p.status === "error");
      const events = pod ? await api.get(`/api/pods/${pod.name}/events?limit=5`) : undefined;
      throw new Error(
        `pod ${pod?.name ?? "?"} ended in error: ${JSON.stringify(events?.body).slice(0, 600)}`,
      );
    }
    if ((counts.running ?? 0) >= expected) return;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${expected} running pods: ${JSON.stringify(counts)}`);
    await sleep(250);
  }
}

/** One pod: POST, then the newest page of the list every 20 ms until it says running; ms. */
async function createOne(api: ApiClient, name: string): Promise<number> {
  const t0 = now();
  const reason = await post(api, [name]);
  if (reason) throw new Error(reason);
  for (;;) {
    const res = await api.get<PodList>("/api/pods?limit=5");
    const status = res.body?.pods?.find((p) => p.name === name)?.status;
    if (status === "running") return now() - t0;
    if (status === "error") throw new Error(`pod ${name} ended in error`);
    if (now() - t0 > 120_000) throw new Error(`pod ${name} not running after 120 s`);
    await sleep(POLL_MS);
  }
}

// ------------------------------------------------------------------------------ the floor, bare dockerode

function httpStatus(host: string, port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: "/", agent: false, timeout: 2_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(0));
  });
}

/** Bare-engine pods under their own prefix (the agent never sees them): the floors of create and memory. */
class Floor {
  readonly prefix: string;
  private made = 0;
  constructor(stackPrefix: string) {
    this.prefix = `${stackPrefix}fl`;
  }

  /** Network, volume, container (the agent's own create options), start, web port answers; ms. */
  async create(plan: Plan): Promise<number> {
    const pod = `f${++this.made}`;
    const n = podNames(this.prefix, pod);
    const spec = podSpec({
      podId: "pod_benchfloor",
      name: pod,
      sshPort: 22999,
      preset: "static",
      plan,
      podDomain: "pods.localhost",
    });
    const labels = podLabels(this.prefix, pod, "pod_benchfloor");
    const t0 = now();
    await docker.createNetwork({ Name: n.network, Driver: "bridge", CheckDuplicate: true, Labels: labels });
    await docker.createVolume({ Name: n.volume, Driver: "local", Labels: labels });
    await docker.createContainer(containerCreateOptions(this.prefix, spec, IMAGE));
    // the pod's files, as the agent writes them (untimed, as in bench/lifecycle: product work, not Docker's)
    const t1 = now();
    await docker.getContainer(n.container).putArchive(buildTar(specFileEntries(spec)), { path: HOME });
    const files = now() - t1;
    await docker.getContainer(n.container).start();
    const info = await docker.getContainer(n.container).inspect();
    const ip = info.NetworkSettings.Networks[n.network]?.IPAddress ?? "";
    while ((await httpStatus(ip, spec.port)) !== 200) {
      if (now() - t0 > 60_000) throw new Error(`floor pod ${pod} does not answer`);
      await sleep(10);
    }
    return now() - t0 - files;
  }

  removeAll(): Promise<void> {
    return removePrefixed(docker, this.prefix);
  }
}

/** Cgroup memory of the running containers of a prefix (as `docker stats` counts it): total MB and count. */
async function cgroupMemory(prefix: string): Promise<{ mb: number; count: number }> {
  const list = await docker.listContainers({ filters: prefixFilter(prefix) });
  let bytes = 0;
  let count = 0;
  for (const c of list) {
    const info = await docker
      .getContainer(c.Id)
      .inspect()
      .catch(() => null);
    if (!info?.State.Running) continue;
    const r = await readContainerCgroup(info.State.Pid, info.Id).catch(() => null);
    if (!r) continue;
    bytes += r.memoryUsed;
    count++;
  }
  return { mb: bytes / MB, count };
}

// ------------------------------------------------------------------------------------------ a checkpoint

interface Checkpoint {
  pods: number;
  create: number[];
  floorCreate: number[];
  list20: number[];
  list100: number[];
  floorList: number[];
  cliList: number[];
  memPerPodMb: number;
  floorMemPerPodMb: number;
  availableDropPerPodMb: number;
  idle: Idle;
}

const timed = async (fn: () => Promise<unknown>) => {
  const t0 = now();
  await fn();
  return now() - t0;
};

async function measure(
  stack: Stack,
  api: ApiClient,
  floor: Floor,
  plan: Plan,
  next: () => string,
  availableAtStart: number,
): Promise<Checkpoint> {
  // create: ours and the floor's in turns
  const create: number[] = [];
  const floorCreate: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    if (i % 2 === 0) {
      create.push(await createOne(api, next()));
      floorCreate.push(await floor.create(plan));
    } else {
      floorCreate.push(await floor.create(plan));
      create.push(await createOne(api, next()));
    }
  }
  const pods = (await api.get<PodList>("/api/pods?limit=1")).body.status_counts.running ?? 0;

  // list: the API's pages beside the engine's own list of the same containers
  const list20: number[] = [];
  const list100: number[] = [];
  const floorList: number[] = [];
  const cliList: number[] = [];
  const filters = prefixFilter(stack.prefix);
  for (let i = 0; i < LIST_REPS + 2; i++) {
    const variants: [number[], () => Promise<unknown>][] = [
      [list20, () => api.get("/api/pods")],
      [list100, () => api.get("/api/pods?limit=100")],
      [floorList, () => docker.listContainers({ all: true, filters })],
      [cliList, () => run("docker", ["ps", "-a", "--filter", `label=podhost.prefix=${stack.prefix}`])],
    ];
    for (let j = 0; j < variants.length; j++) {
      const [samples, fn] = variants[(i + j) % variants.length] as [number[], () => Promise<unknown>];
      const ms = await timed(fn);
      if (i >= 2) samples.push(ms); // two rounds of warm-up
    }
  }

  // memory: ours (idle a while) and the floor's (fresh: their page cache is still warm) per container
  const ours = await cgroupMemory(stack.prefix);
  const theirs = await cgroupMemory(floor.prefix);
  await floor.removeAll();
  // settle: the last creates' work, the engine's and nginx's reloads
  await sleep(5_000);
  const available = await meminfoMb("MemAvailable");
  const idle = await idleWindow(stack.agent.child.pid ?? 0);
  return {
    pods,
    create,
    floorCreate,
    list20,
    list100,
    floorList,
    cliList,
    memPerPodMb: ours.mb / Math.max(1, ours.count),
    floorMemPerPodMb: theirs.mb / Math.max(1, theirs.count),
    availableDropPerPodMb: (availableAtStart - available) / Math.max(1, pods),
    idle,
  };
}

// ---------------------------------------------------------------------------------------------- main

async function main() {
  console.log(`at start: ${machineLoad()}`);
  const plan = findPlan("launch");
  if (!plan) throw new Error("launch plan missing from the catalog");
  const stack = await startStack("dens", { direct: true });
  const floor = new Floor(stack.prefix);
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= floor
      .removeAll()
      .catch(() => undefined)
      .then(() => stack.stop());
    return cleaned;
  };
  process.once("SIGINT", () => {
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    stack.agentEnv.PODHOST_METRICS_INTERVAL_S = String(INTERVAL_S);
    await stack.agent.stop();
    await stack.startAgent();
    const user = await signUp(stack.api, "Density");
    await waitForHostOnline(user.api);
    const api = user.api;
    const pools = await addressPools();
    const availableAtStart = await meminfoMb("MemAvailable");
    const memTotal = await meminfoMb("MemTotal");
    const diskRoot = loadConfig({}).podDiskRoot || "/var/lib/docker";
    const disk = await statfs(diskRoot);
    const real = {
      cpu: hostCpus().length,
      memoryMb: Math.floor(memTotal),
      diskGb: Math.floor((disk.blocks * disk.bsize) / 1024 ** 3),
    };
    console.log(
      `machine: ${real.cpu} CPUs, ${fmt(memTotal / 1024, 1)} GiB (${fmt(availableAtStart / 1024, 1)} GiB available), ` +
        `${real.diskGb} GB pod disk (${diskRoot}), ${await networksLeft(pools)} pod networks left in the engine's pools`,
    );

    // the empty host: the floor of the agent's idle CPU, and its RSS beside a bare node
    await sleep(3_000);
    const emptyIdle = await idleWindow(stack.agent.child.pid ?? 0);
    const bareRss = await bareNodeRss();

    // 1. the machine's own capacity registered
    await setCapacity(stack, real.cpu, real.memoryMb, real.diskGb);
    let made = 0;
    const next = () => `dens-${++made}`;
    let placementStop = `none before --max ${MAX}`;
    while (made < MAX) {
      const name = next();
      const res = await api.post("/api/pods", { name, preset: "static" });
      if (res.status === 503) {
        made--;
        placementStop = `"${typeof res.body?.error === "string" ? res.body.error : JSON.stringify(res.body)}"; out of: ${exhausted(await hostRow(stack), plan)}`;
        break;
      }
      if (res.status !== 202) throw new Error(`POST /api/pods: ${res.status} ${JSON.stringify(res.body)}`);
    }
    await allRunning(api, made);
    const realCapacityPods = made;
    console.log(
      `\nregistered with the machine's capacity (${real.cpu} CPUs, ${real.memoryMb} MB, ${real.diskGb} GB): ` +
        `${realCapacityPods} launch pods placed, then 503: ${placementStop}`,
    );

    // 2. overcommitted to hold --max, filled until something says no
    await setCapacity(stack, MAX * plan.cpu, MAX * plan.memoryMb, MAX * plan.diskGb);
    console.log(`capacity raised to ${MAX} launch pods (cpu ${MAX * plan.cpu}, ${MAX * plan.memoryMb} MB)`);
    const checkpoints: Checkpoint[] = [];
    const t0 = now();
    /** Batches until `count` pods run; null, or what said no. */
    const fillTo = async (count: number): Promise<string | null> => {
      while (made < count) {
        const n = Math.min(BATCH, count - made);
        const available = await meminfoMb("MemAvailable");
        if (available - n * MB_PER_POD_ESTIMATE < MIN_AVAILABLE_MB)
          return `the machine's memory: MemAvailable ${fmt(available, 0)} MB, the bench keeps ${MIN_AVAILABLE_MB} MB`;
        const left = await networksLeft(pools);
        // room kept for the last checkpoint's probes, ours and the floor's (a network each)
        if (left - n < KEEP_NETWORKS + 2 * PROBES)
          return `the engine's address pools: ${left} networks left for pod networks, ${KEEP_NETWORKS} kept for other work (default-address-pools in /etc/docker/daemon.json)`;
        const refused = await post(api, Array.from({ length: n }, next));
        if (refused) return refused;
        try {
          await allRunning(api, made);
        } catch (error) {
          return error instanceof Error ? error.message : String(error);
        }
        process.stdout.write(`\r${made} pods running (${fmt((now() - t0) / 1000, 0)} s)   `);
      }
      return null;
    };
    let stop = `--max ${MAX} reached`;
    let checkpointFailed = false;
    /** A checkpoint, or null when it failed (what failed becomes the reason the filling stopped). */
    const tryMeasure = async () => {
      try {
        return await measure(stack, api, floor, plan, next, availableAtStart);
      } catch (error) {
        stop = `a checkpoint failed: ${error instanceof Error ? error.message : String(error)}`;
        checkpointFailed = true;
        await floor.removeAll().catch(() => undefined);
        return null;
      }
    };
    for (const target of [...CHECKPOINTS.filter((c) => c < MAX), MAX]) {
      const said = await fillTo(target - PROBES);
      if (said) {
        stop = said;
        break;
      }
      console.log(`\n${made + PROBES} pods: measuring`);
      const c = await tryMeasure();
      if (!c) break;
      checkpoints.push(c);
    }
    const reached = (await api.get<PodList>("/api/pods?limit=1")).body.status_counts.running ?? 0;
    console.log(`\n${reached} static pods running; the filling stopped: ${stop}`);
    if (!checkpointFailed && checkpoints.at(-1)?.pods !== reached) {
      // the largest count reached is measured too (the filling stopped between checkpoints)
      console.log(`${reached + PROBES} pods: measuring`);
      const c = await tryMeasure();
      if (c) checkpoints.push(c);
    }

    // the last checkpoint's probes come on top of where the filling stopped
    const most = Math.max(reached, ...checkpoints.map((c) => c.pods));
    report(checkpoints, emptyIdle, bareRss, { realCapacityPods, placementStop, stop, reached: most });
    console.log(`\nat end: ${machineLoad()}`);
  } finally {
    const t = now();
    await cleanup();
    console.log(`cleaned up in ${fmt((now() - t) / 1000, 0)} s`);
  }
}

function report(
  checkpoints: Checkpoint[],
  emptyIdle: Idle,
  bareRss: number,
  outcome: { realCapacityPods: number; placementStop: string; stop: string; reached: number },
) {
  const ratio = (a: number, b: number) => `${fmt(a / b, 2)}x`;
  console.log("\nper pod count (medians; floors measured in the same run)\n");
  const rows: string[][] = [];
  for (const c of checkpoints) {
    const at = `${c.pods} pods`;
    const cm = median(c.create);
    const fm = median(c.floorCreate);
    rows.push([
      at,
      "create → running (API)",
      fmt(cm, 0),
      "bare dockerode create+start+port",
      fmt(fm, 0),
      ratio(cm, fm),
    ]);
    const fl = median(c.floorList);
    rows.push([
      at,
      "GET /api/pods (20 per page)",
      fmt(median(c.list20), 1),
      "dockerode list",
      fmt(fl, 1),
      ratio(median(c.list20), fl),
    ]);
    rows.push([
      at,
      "GET /api/pods?limit=100",
      fmt(median(c.list100), 1),
      "dockerode list",
      fmt(fl, 1),
      ratio(median(c.list100), fl),
    ]);
    rows.push([at, "", "", "`docker ps -a` (context)", fmt(median(c.cliList), 1), ""]);
    rows.push([
      at,
      "cgroup memory per pod, MB",
      fmt(c.memPerPodMb, 1),
      "bare container, same image",
      fmt(c.floorMemPerPodMb, 1),
      ratio(c.memPerPodMb, c.floorMemPerPodMb),
    ]);
    rows.push([at, "MemAvailable drop per pod, MB", fmt(c.availableDropPerPodMb, 1), "", "", ""]);
    rows.push([
      at,
      `agent CPU at idle, % of a core (${IDLE_S} s)`,
      fmt(c.idle.cpuPercent, 2),
      "agent, empty host",
      fmt(emptyIdle.cpuPercent, 2),
      "",
    ]);
    rows.push([
      at,
      "agent RSS at idle, MB",
      fmt(c.idle.rssMb, 1),
      "bare idle node",
      fmt(bareRss, 1),
      ratio(c.idle.rssMb, bareRss),
    ]);
    rows.push([
      at,
      "dockerd CPU, same window (context)",
      fmt(c.idle.dockerdPercent, 2),
      "empty host",
      fmt(emptyIdle.dockerdPercent, 2),
      "",
    ]);
  }
  console.log(formatTable(["", "measure", "ours (ms | MB | %)", "floor", "floor value", "ratio"], rows));
  console.log(
    `\nagent on the empty host: CPU ${fmt(emptyIdle.cpuPercent, 2)}%, RSS ${fmt(emptyIdle.rssMb, 1)} MB`,
  );

  const last = checkpoints.at(-1);
  console.log(
    `\npods: ${outcome.reached} (with the machine's own capacity registered: ${outcome.realCapacityPods}, then ${outcome.placementStop}; overcommitted: stopped by ${outcome.stop})`,
  );
  if (last) {
    console.log(
      `agent CPU at idle: ${fmt(last.idle.cpuPercent, 2)}% at ${last.pods} pods (empty host ${fmt(emptyIdle.cpuPercent, 2)}%; metrics every ${INTERVAL_S} s)\n`,
    );
  }
  v.absolute({
    figure: "idle static pods on this machine",
    value: outcome.reached,
    limit: TARGET.pods,
    direction: "at least",
    unit: "pods",
  });
  v.absolute({
    figure: `agent CPU at idle with ${last?.pods ?? 0} pods`,
    value: last ? last.idle.cpuPercent : Number.NaN,
    limit: TARGET.agentCpuPercent,
    unit: "%",
  });
  v.finish();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
