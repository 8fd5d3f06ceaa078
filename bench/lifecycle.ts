/**
 * Pod lifecycle bench: what the control plane adds on top of Docker, on the real stack (Worker in workerd
 * + registered host + agent process + Docker engine + nginx ingress), each figure beside its floor measured
 * in the same run.
 *
 *   tsx bench/lifecycle.ts [--reps 7] [--pings 300] [--pods 50] [--parallel 4]
 *
 * 1. create → running: POST /api/pods, then the pod list every 20 ms until it says `running` (see
 *    below), and the pod's page through the ingress every 10 ms until 200. Floors: the same container
 *    made directly — with dockerode (the client the agent uses: network, volume, create, start, then the
 *    web port polled every 10 ms until it answers 200) and with the docker CLI (`network create`,
 *    `volume create`, `run -d`, same poll). Both use the agent's own `containerCreateOptions` (same
 *    image, user, caps, read-only root, tmpfs, limits, own network, named volume). Target: API ≤ 1.5x
 *    the dockerode floor, and POST → page through the ingress ≤ 1.2x that floor (issue #30 item 8; the
 *    product's ≤ 600 ms p50 is shown beside it, not judged: the bare engine alone can take longer here).
 * 2. stop / start: POST /api/pods/{name}/stop and /start (each answers once the host confirmed; start
 *    once the web port answers) beside `stop` / `start` of an equivalent container with dockerode and
 *    with the CLI, start measured until the port answers 200. Target: ≤ 1.3x the dockerode floor.
 * 3. no-op command round trip: GET /agent/ping (Worker → HostAgent DO → agent over WebSocket → back)
 *    beside the same Worker's bare GET /health, sequential, in interleaved rounds after a warm-up.
 *    Target: adds ≤ 5 ms at p50.
 * 4. the agent's RSS (VmRSS of its process) idle and with `--pods` running pods, created through the API
 *    `--parallel` at a time in a team made for the bench. Target: ≤ 150 MB with 50 pods (with fewer, as
 *    `--pods 10` makes, the figure is printed and NOT MET). A create that
 *    ends in `error` (e.g. the engine out of network address pools) stops the filling: the memory is then
 *    read with the pods that did come up, and the target is reported as not met.
 *
 * Where the time of a create goes: the floor's steps are timed one by one, plus a `putArchive` of the
 * files the agent writes (timed but not part of the floor), plus an nginx vhost upsert (render, `nginx -t`,
 * reload, wait for the old workers) on a bench-owned ingress with the agent's own Ingress class, with 1
 * and with `--pods` vhosts; the agent's own figure per command comes from its "command done" log lines.
 *
 * Why the list and not GET /api/pods/{name}: that route asks the host (a `pod.inspect` through the DO and
 * the agent, a Docker inspect) on every call, so polling it every 20 ms loads the very agent and engine
 * that are creating the pod — in trial runs the agent's own create time rose by about 0.15x of the floor.
 * The list reads the same status from D1 without touching the host; GET /api/pods/{name} is still asked
 * once at the end and must agree.
 *
 * Variants take turns inside each repetition (in rotating order), so drift on a busy machine spreads over
 * all of them. Everything is removed at the end, also on failure or Ctrl-C.
 */

import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import type { ContainerCreateOptions } from "dockerode";
import { createDockerClient, type DockerClient } from "../agent/docker/client";
import { containerCreateOptions } from "../agent/docker/container-spec";
import { HOME, podLabels, podNames } from "../agent/docker/naming";
import { specFileEntries } from "../agent/docker/spec-files";
import { buildTar } from "../agent/docker/tar";
import { Ingress } from "../agent/ingress/nginx";
import { renderVhost } from "../agent/ingress/vhost";
import { createLogger } from "../agent/logger";
import { findPlan } from "../shared/catalog";
import type { PodSpec } from "../shared/protocol";
import { type apiClient, signUp } from "../test/e2e/support/api";
import { freePort, type Stack, sleep, startStack, waitFor } from "../test/e2e/support/stack";
import { httpGet } from "../test/support/http";
import { podSpec } from "../worker/services/pods/spec";
import { fmt, formatTable, median, percentile, summarize } from "./stats";
import { positiveInt } from "./support/args";
import { removePrefixed } from "./support/floor-cleanup";
import { keepAliveAgent, runLoad } from "./support/load";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = {
  create: 1.5,
  createPage: 1.2,
  createPageMs: 600,
  power: 1.3,
  pingAddedMs: 5,
  rssMb: 150,
  rssPods: 50,
};
const v = verdicts("lifecycle");
const API_POLL_MS = 20;
const PAGE_POLL_MS = 10;
const IMAGE = "podhost/static:latest";
const POD_DOMAIN = "pods.localhost";

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "7" },
    pings: { type: "string", default: "300" },
    pods: { type: "string", default: "50" },
    parallel: { type: "string", default: "4" },
  },
});
const REPS = positiveInt("reps", args.reps);
const PINGS = positiveInt("pings", args.pings);
const PODS = positiveInt("pods", args.pods);
const PARALLEL = positiveInt("parallel", args.parallel);

const run = promisify(execFile);
const docker: DockerClient = createDockerClient("/var/run/docker.sock");
const now = () => performance.now();
const mb = (kb: number) => kb / 1024;

// ---------------------------------------------------------------------------------------------- probes

/** Status of GET / on ip:port on a fresh connection (like a first visitor); 0 when nothing answers. */
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

/** Polls `ok` every `intervalMs` (first try at once); the time it first held, or throws after the timeout. */
async function until(what: string, ok: () => Promise<boolean>, intervalMs: number, timeoutMs = 60_000) {
  const deadline = now() + timeoutMs;
  for (;;) {
    if (await ok()) return now();
    if (now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

interface Memory {
  rssKb: number;
  hwmKb: number;
}

/** VmRSS and VmHWM (peak RSS) of a process, in kB. */
async function memoryOf(pid: number): Promise<Memory> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssKb: field("VmRSS"), hwmKb: field("VmHWM") };
}

type AgentLog = ReturnType<typeof watchAgentCommands>;

/** The agent's "command done" log lines: per op, the ms of each run in order (the agent's own view). */
function watchAgentCommands(stack: Stack) {
  const done = new Map<string, number[]>();
  let buffered = "";
  stack.agent.child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.includes('"command done"')) continue;
      try {
        const entry = JSON.parse(line) as { op?: string; ms?: number };
        if (!entry.op || typeof entry.ms !== "number") continue;
        const runs = done.get(entry.op) ?? [];
        runs.push(entry.ms);
        done.set(entry.op, runs);
      } catch {
        // a line that is not ours
      }
    }
  });
  /** `count(op)` before a phase, `since(op, count)` after it: the ms of each `op` logged in between. */
  return {
    count: (op: string) => done.get(op)?.length ?? 0,
    since: (op: string, from: number) => (done.get(op) ?? []).slice(from),
  };
}

// ------------------------------------------------------------------------------------ the floor, by hand

/** What the API would hand the agent for a static launch pod; the floors build their containers from it. */
function floorSpec(name: string): PodSpec {
  const plan = findPlan("launch");
  if (!plan) throw new Error("launch plan missing from the catalog");
  return podSpec({
    podId: "pod_benchfloor",
    name,
    sshPort: 22999,
    preset: "static",
    plan,
    podDomain: POD_DOMAIN,
  });
}

/** The CLI takes a seccomp profile as a file where the API takes the JSON itself. */
function cliSecurityOpt(opt: string): string {
  if (!opt.startsWith("seccomp=")) return opt;
  const file = path.join(tmpdir(), `podhost-bench-seccomp-${process.pid}.json`);
  writeFileSync(file, opt.slice("seccomp=".length));
  process.once("exit", () => rmSync(file, { force: true }));
  return `seccomp=${file}`;
}

/** CLI flags for the container `containerCreateOptions` describes (derived from it, so they stay in step). */
function cliRunArgs(o: ContainerCreateOptions): string[] {
  const h = o.HostConfig ?? {};
  const flag = (name: string, value: unknown) => (value === undefined ? [] : [name, String(value)]);
  return [
    "run",
    "-d",
    ...flag("--name", o.name),
    ...flag("--hostname", o.Hostname),
    ...flag("--user", o.User),
    ...flag("--workdir", o.WorkingDir),
    ...(h.Init ? ["--init"] : []),
    ...((h.CapDrop ?? []) as string[]).flatMap((c) => ["--cap-drop", c]),
    ...((h.SecurityOpt ?? []) as string[]).flatMap((s) => ["--security-opt", cliSecurityOpt(s)]),
    ...(h.ReadonlyRootfs ? ["--read-only"] : []),
    ...Object.entries(h.Tmpfs ?? {}).flatMap(([p, opts]) => ["--tmpfs", `${p}:${opts}`]),
    ...flag("--memory", h.Memory),
    ...flag("--memory-swap", h.MemorySwap),
    ...flag("--cpus", h.NanoCpus === undefined ? undefined : h.NanoCpus / 1e9),
    ...flag("--pids-limit", h.PidsLimit),
    ...flag("--oom-score-adj", h.OomScoreAdj),
    ...flag("--network", h.NetworkMode),
    ...(h.Mounts ?? []).flatMap((m) => ["--mount", `type=volume,src=${m.Source},dst=${m.Target}`]),
    ...flag("--ipc", h.IpcMode),
    ...flag("--restart", h.RestartPolicy?.Name),
    ...flag("--log-driver", h.LogConfig?.Type),
    ...Object.entries(h.LogConfig?.Config ?? {}).flatMap(([k, v]) => ["--log-opt", `${k}=${v}`]),
    ...flag("--stop-timeout", o.StopTimeout),
    ...Object.entries(o.Labels ?? {}).flatMap(([k, v]) => ["--label", `${k}=${v}`]),
    o.Image ?? IMAGE,
  ];
}

interface FloorSteps {
  network: number;
  volume: number;
  create: number;
  putArchive: number;
  start: number;
  ip: number;
  port: number;
  /** network … port, without putArchive (the agent's files are product work, not Docker's) */
  total: number;
}

/** The floor objects live under their own prefix, so the agent's event watcher never sees them. */
class Floor {
  readonly prefix: string;
  constructor(stackPrefix: string) {
    this.prefix = `${stackPrefix}fl`;
  }

  names(pod: string) {
    return podNames(this.prefix, pod);
  }

  private async network(pod: string) {
    await docker.createNetwork({
      Name: this.names(pod).network,
      Driver: "bridge",
      CheckDuplicate: true,
      Labels: podLabels(this.prefix, pod, "pod_benchfloor"),
      Options: { "com.docker.network.bridge.enable_icc": "true" },
    });
  }

  private async ipOf(pod: string): Promise<string> {
    const info = await docker.getContainer(this.names(pod).container).inspect();
    const ip = info.NetworkSettings.Networks[this.names(pod).network]?.IPAddress;
    if (!ip) throw new Error(`floor container ${pod} has no address`);
    return ip;
  }

  /** Network, volume, container, start, web port answering: each step timed, with dockerode. */
  async createWithDockerode(pod: string): Promise<FloorSteps> {
    const n = this.names(pod);
    const spec = floorSpec(pod);
    const t0 = now();
    await this.network(pod);
    const t1 = now();
    await docker.createVolume({ Name: n.volume, Driver: "local", Labels: podLabels(this.prefix, pod, "x") });
    const t2 = now();
    await docker.createContainer(containerCreateOptions(this.prefix, spec, IMAGE));
    const t3 = now();
    await docker.getContainer(n.container).putArchive(buildTar(specFileEntries(spec)), { path: HOME });
    const t4 = now();
    await docker.getContainer(n.container).start();
    const t5 = now();
    const ip = await this.ipOf(pod);
    const t6 = now();
    const t7 = await until(
      `${pod} port`,
      async () => (await httpStatus(ip, spec.port)) === 200,
      PAGE_POLL_MS,
    );
    return {
      network: t1 - t0,
      volume: t2 - t1,
      create: t3 - t2,
      putArchive: t4 - t3,
      start: t5 - t4,
      ip: t6 - t5,
      port: t7 - t6,
      total: t7 - t0 - (t4 - t3),
    };
  }

  /** The same with the docker CLI: `network create`, `volume create`, `run -d`, then the port. */
  async createWithCli(pod: string): Promise<{ run: number; total: number }> {
    const n = this.names(pod);
    const spec = floorSpec(pod);
    const labels = Object.entries(podLabels(this.prefix, pod, "x")).flatMap(([k, v]) => [
      "--label",
      `${k}=${v}`,
    ]);
    const t0 = now();
    await run("docker", ["network", "create", ...labels, n.network]);
    await run("docker", ["volume", "create", ...labels, n.volume]);
    const t1 = now();
    await run("docker", cliRunArgs(containerCreateOptions(this.prefix, spec, IMAGE)));
    const t2 = now();
    const ip = await this.cliIp(pod);
    const t3 = await until(
      `${pod} port`,
      async () => (await httpStatus(ip, spec.port)) === 200,
      PAGE_POLL_MS,
    );
    return { run: t2 - t1, total: t3 - t0 };
  }

  private async cliIp(pod: string): Promise<string> {
    const n = this.names(pod);
    const { stdout } = await run("docker", [
      "inspect",
      "--format",
      `{{(index .NetworkSettings.Networks "${n.network}").IPAddress}}`,
      n.container,
    ]);
    return stdout.trim();
  }

  async stopWithDockerode(pod: string): Promise<number> {
    const t0 = now();
    await docker.getContainer(this.names(pod).container).stop({ t: 10 });
    return now() - t0;
  }

  async startWithDockerode(pod: string): Promise<number> {
    const t0 = now();
    await docker.getContainer(this.names(pod).container).start();
    const ip = await this.ipOf(pod);
    return (await until(`${pod} port`, async () => (await httpStatus(ip, 8080)) === 200, PAGE_POLL_MS)) - t0;
  }

  async stopWithCli(pod: string): Promise<number> {
    const t0 = now();
    await run("docker", ["stop", "-t", "10", this.names(pod).container]);
    return now() - t0;
  }

  async startWithCli(pod: string): Promise<number> {
    const t0 = now();
    await run("docker", ["start", this.names(pod).container]);
    const ip = await this.cliIp(pod);
    return (await until(`${pod} port`, async () => (await httpStatus(ip, 8080)) === 200, PAGE_POLL_MS)) - t0;
  }

  /** Container, volume and network of one floor pod, whatever state they are in. */
  async remove(pod: string) {
    const n = this.names(pod);
    const quiet = () => undefined;
    await docker.getContainer(n.container).remove({ force: true }).catch(quiet);
    await docker.getVolume(n.volume).remove().catch(quiet);
    await docker.getNetwork(n.network).remove().catch(quiet);
  }

  /** Everything left under the floor prefix (after a failure half-way). */
  removeAll() {
    return removePrefixed(docker, this.prefix);
  }
}

// ------------------------------------------------------------------------------------------ the API side

type Api = ReturnType<typeof apiClient>;

interface ApiCreate {
  post: number;
  running: number;
  page: number;
}

/** POST the pod, then poll the pod list (20 ms) and the page through the ingress (10 ms) side by side. */
async function createThroughApi(api: Api, stack: Stack, name: string): Promise<ApiCreate> {
  const t0 = now();
  const res = await api.post("/api/pods", { name, preset: "static", plan_slug: "launch" });
  const post = now() - t0;
  if (res.status !== 202) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  const [running, page] = await Promise.all([
    until(
      `${name} running`,
      async () => {
        const list = await api.get("/api/pods?limit=100");
        const pod = list.body?.pods?.find((p: { name: string }) => p.name === name);
        if (pod?.status === "error") throw new Error(`${name} failed: ${JSON.stringify(pod)}`);
        return pod?.status === "running";
      },
      API_POLL_MS,
    ),
    pageAnswers(stack, name, PAGE_POLL_MS),
  ]);
  const live = await api.get(`/api/pods/${name}`);
  if (live.body?.status !== "running") throw new Error(`${name}: GET says ${JSON.stringify(live.body)}`);
  return { post, running: running - t0, page: page - t0 };
}

const pageAnswers = (stack: Stack, name: string, intervalMs: number) =>
  until(
    `${name}'s page`,
    async () => {
      const page = await httpGet(stack.edgePort, `${name}.${POD_DOMAIN}`).catch(() => null);
      return page?.status === 200;
    },
    intervalMs,
  );

async function power(api: Api, name: string, action: "stop" | "start"): Promise<number> {
  const t0 = now();
  const res = await api.post(`/api/pods/${name}/${action}`);
  const ms = now() - t0;
  const want = action === "stop" ? "stopped" : "running";
  if (res.status !== 200 || res.body?.status !== want) {
    throw new Error(`${action} ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return ms;
}

// --------------------------------------------------------------------------------------------- reporting

const p50 = (samples: number[]) => fmt(median(samples), 0);
const p90 = (samples: number[]) => fmt(percentile(samples, 90), 0);
const ratio = (a: number, b: number) => `${fmt(a / b)}x`;

/** A row of a "path, n, p50, p90, ratios" table. */
const row = (label: string, samples: number[], ...floors: number[]) => [
  label,
  String(samples.length),
  p50(samples),
  p90(samples),
  ...floors.map((f) => ratio(median(samples), f)),
];

/** One untimed run of each variant, then `reps` rounds in which they take turns in rotating order. */
async function interleaved(variants: ((timed: boolean) => Promise<void>)[], reps: number) {
  for (const v of variants) await v(false);
  for (let rep = 0; rep < reps; rep++) {
    for (let i = 0; i < variants.length; i++) await variants[(i + rep) % variants.length]?.(true);
  }
}

// ------------------------------------------------------------------------------------------------- phases

interface Bench {
  stack: Stack;
  api: Api;
  floor: Floor;
  agentLog: AgentLog;
  agentPid: number;
  /** pods created through the API so far, oldest first */
  pods: string[];
}

const nextPodName = (b: Bench) => `lc-${String(b.pods.length + 1).padStart(2, "0")}`;

interface PingResult {
  rows: { label: string; s: ReturnType<typeof summarize> }[];
  /** p50 of /agent/ping minus p50 of /health */
  added: number;
}

/**
 * /health, the host-token check alone (`/agent/connect` without an upgrade: auth, then 400) and
 * /agent/ping, sequential over one keep-alive connection, in interleaved rounds after a warm-up.
 */
async function measurePing(stack: Stack, requests: number): Promise<PingResult> {
  const bearer = { authorization: `Bearer ${stack.agentEnv.PODHOST_AGENT_TOKEN}` };
  const routes = [
    { label: "GET /health (bare)", path: "/health", headers: {}, status: 200 },
    {
      label: "GET /agent/connect, no upgrade (token check)",
      path: "/agent/connect",
      headers: bearer,
      status: 400,
    },
    { label: "GET /agent/ping (+ DO → agent → back)", path: "/agent/ping", headers: bearer, status: 200 },
  ];
  const ROUNDS = 5;
  const agent = keepAliveAgent(1);
  try {
    const load = async (r: (typeof routes)[number], n: number) => {
      const url = `${stack.api}${r.path}`;
      const res = await runLoad({
        url,
        headers: r.headers,
        requests: n,
        concurrency: 1,
        agent,
        ok: (s) => s === r.status,
      });
      if (res.failures > 0)
        throw new Error(`${r.label}: ${res.failures} failed: ${JSON.stringify(res.firstFailure)}`);
      return res.latencies;
    };
    for (const r of routes) await load(r, 100);
    const samples = routes.map((): number[] => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < routes.length; i++) {
        const k = (i + round) % routes.length;
        const r = routes[k];
        if (r) samples[k]?.push(...(await load(r, Math.ceil(requests / ROUNDS))));
      }
    }
    const rows = routes.map((r, i) => ({ label: r.label, s: summarize(samples[i] ?? []) }));
    return { rows, added: (rows[2]?.s.p50 ?? Number.NaN) - (rows[0]?.s.p50 ?? Number.NaN) };
  } finally {
    agent.destroy();
  }
}

function printPing({ rows }: PingResult) {
  const bare = rows[0]?.s.p50 ?? Number.NaN;
  const table = rows.map(({ label, s }) => [
    label,
    String(s.count),
    fmt(s.p50),
    fmt(s.p90),
    fmt(s.p99),
    fmt(s.p50 - bare),
  ]);
  console.log(formatTable(["route", "n", "p50 ms", "p90 ms", "p99 ms", "p50 added ms"], table));
}

/** The same vhost upsert the agent does on create, on a bench-owned nginx: with 1 vhost, then with `many`. */
async function measureVhostUpserts(many: number, reps: number) {
  const stateDir = await mkdtemp(path.join(tmpdir(), "podhost-bench-ingress-"));
  const listen = `127.0.0.1:${await freePort()}`;
  // a secret of its own: the bench measures the config's reload, not a request through it
  const ingress = new Ingress({
    stateDir,
    listen,
    edgeSecret: randomBytes(32).toString("hex"),
    log: createLogger({}, true),
  });
  const spec = { pod: "bench", podId: "pod_bench", domains: [`bench.${POD_DOMAIN}`], ip: "10.254.0.2" };
  const timed = async () => {
    const out: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = now();
      await ingress.upsert({ ...spec, port: 8080 + (i % 2) }); // the file changes: test + reload every time
      out.push(now() - t0);
    }
    return out;
  };
  try {
    await ingress.start();
    await ingress.upsert({ ...spec, port: 9000 }); // warm-up
    const one = await timed();
    for (let i = 1; i < many; i++) {
      const pod = `other-${i}`;
      const ip = `10.254.${1 + Math.floor(i / 250)}.${(i % 250) + 2}`;
      const text = renderVhost(`unix:${ingress.podsSocket}`, {
        pod,
        podId: `pod_${i}`,
        domains: [`${pod}.${POD_DOMAIN}`],
        ip,
        port: 8080,
      });
      await writeFile(ingress.vhostPath(pod), text);
    }
    return { one, withMany: await timed() };
  } finally {
    await ingress.stop().catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
  }
}

/** 1. create → running through the API, beside the dockerode and CLI floors; the steps of a create. */
async function createPhase(b: Bench): Promise<void> {
  const api: ApiCreate[] = [];
  const viaDockerode: FloorSteps[] = [];
  const viaCli: { run: number; total: number }[] = [];
  const agentBefore = b.agentLog.count("pod.create");
  let floorPods = 0;
  await interleaved(
    [
      async (timed) => {
        const name = nextPodName(b);
        const r = await createThroughApi(b.api, b.stack, name);
        b.pods.push(name); // kept: they count towards the full host of phase 4
        if (timed) api.push(r);
      },
      async (timed) => {
        const pod = `c${++floorPods}`;
        const r = await b.floor.createWithDockerode(pod);
        await b.floor.remove(pod);
        if (timed) viaDockerode.push(r);
      },
      async (timed) => {
        const pod = `c${++floorPods}`;
        const r = await b.floor.createWithCli(pod);
        await b.floor.remove(pod);
        if (timed) viaCli.push(r);
      },
    ],
    REPS,
  );
  const agentMs = b.agentLog.since("pod.create", agentBefore + 1); // without the warm-up's
  const vhost = await measureVhostUpserts(PODS, 5);

  const floor = median(viaDockerode.map((s) => s.total));
  const cliFloor = median(viaCli.map((s) => s.total));
  const running = api.map((c) => c.running);
  console.log(
    `\n1. create → running (static preset, launch plan), ${REPS} reps after 1 warm-up; pod list polled every ` +
      `${API_POLL_MS} ms, pages every ${PAGE_POLL_MS} ms\n`,
  );
  console.log(
    formatTable(
      ["path", "n", "p50 ms", "p90 ms", "vs dockerode", "vs CLI"],
      [
        row(
          "API: POST answered (202 creating)",
          api.map((c) => c.post),
          floor,
          cliFloor,
        ),
        row("API: POST → pod list says running", running, floor, cliFloor),
        row(
          "API: POST → page answers via ingress",
          api.map((c) => c.page),
          floor,
          cliFloor,
        ),
        row(
          "dockerode: net+vol+create+start → port 200",
          viaDockerode.map((s) => s.total),
          floor,
          cliFloor,
        ),
        row(
          "CLI: network/volume create, run -d → port 200",
          viaCli.map((s) => s.total),
          floor,
          cliFloor,
        ),
      ],
    ),
  );
  const step = (label: string, samples: number[], note: string) => [label, p50(samples), p90(samples), note];
  const steps = (key: keyof FloorSteps) => viaDockerode.map((s) => s[key]);
  console.log("\nwhere a create's time goes\n");
  console.log(
    formatTable(
      ["step", "p50 ms", "p90 ms", "how"],
      [
        step("network create", steps("network"), "dockerode, floor run"),
        step("volume create", steps("volume"), "dockerode, floor run"),
        step("container create", steps("create"), "dockerode, floor run"),
        step(
          "putArchive of the agent's files",
          steps("putArchive"),
          "dockerode, floor run (not in the floor)",
        ),
        step("container start", steps("start"), "dockerode, floor run"),
        step("inspect for the address", steps("ip"), "dockerode, floor run"),
        step("start → web port answers 200", steps("port"), `floor run, polled every ${PAGE_POLL_MS} ms`),
        step(
          "docker run -d alone",
          viaCli.map((s) => s.run),
          "CLI floor run (create + start)",
        ),
        step("vhost upsert, 1 vhost", vhost.one, "agent's Ingress on a bench nginx: write, -t, reload"),
        step(`vhost upsert, ${PODS} vhosts`, vhost.withMany, "same, with a full host's vhosts"),
        step("agent: pod.create command", agentMs, "the agent's own log (dispatch → result)"),
        step(
          "API says running − agent command",
          running.map((r, i) => r - (agentMs[i] ?? Number.NaN)),
          "POST, Worker → DO → agent, D1 writes, poll",
        ),
      ],
    ),
  );
  const pages = median(api.map((c) => c.page));
  v.ratio({
    figure: "create → running (API) vs dockerode",
    ours: median(running),
    floor,
    target: TARGET.create,
    unit: "ms",
  });
  v.ratio({
    figure: "create → page via ingress vs dockerode → port",
    ours: pages,
    floor,
    target: TARGET.createPage,
    unit: "ms",
  });
  // The product promise, beside the ratio: the bare engine alone can take longer than this here.
  v.shown({ figure: "create → page via ingress p50", value: pages, limit: TARGET.createPageMs, unit: "ms" });
}

/** 2. stop and start through the API beside dockerode and the CLI on an equivalent container. */
async function powerPhase(b: Bench): Promise<void> {
  const pod = b.pods[0];
  if (!pod) throw new Error("no pod to stop and start");
  const floorPod = "ss";
  await b.floor.createWithDockerode(floorPod);
  const stops = { api: [] as number[], dockerode: [] as number[], cli: [] as number[] };
  const starts = {
    api: [] as number[],
    page: [] as number[],
    dockerode: [] as number[],
    cli: [] as number[],
  };
  const stopBefore = b.agentLog.count("pod.stop");
  const startBefore = b.agentLog.count("pod.start");
  await interleaved(
    [
      async (timed) => {
        const stop = await power(b.api, pod, "stop");
        const t = now();
        const start = await power(b.api, pod, "start");
        const page = (await pageAnswers(b.stack, pod, PAGE_POLL_MS)) - t;
        if (!timed) return;
        stops.api.push(stop);
        starts.api.push(start);
        starts.page.push(page);
      },
      async (timed) => {
        const stop = await b.floor.stopWithDockerode(floorPod);
        const start = await b.floor.startWithDockerode(floorPod);
        if (!timed) return;
        stops.dockerode.push(stop);
        starts.dockerode.push(start);
      },
      async (timed) => {
        const stop = await b.floor.stopWithCli(floorPod);
        const start = await b.floor.startWithCli(floorPod);
        if (!timed) return;
        stops.cli.push(stop);
        starts.cli.push(start);
      },
    ],
    REPS,
  );
  await b.floor.remove(floorPod);
  const stopFloor = median(stops.dockerode);
  const startFloor = median(starts.dockerode);
  console.log(`\n2. stop and start, ${REPS} reps after 1 warm-up (start: until the web port answers 200)\n`);
  console.log(
    formatTable(
      ["path", "n", "p50 ms", "p90 ms", "vs dockerode"],
      [
        row("API: POST /stop answered", stops.api, stopFloor),
        row("dockerode: stop({t: 10})", stops.dockerode, stopFloor),
        row("CLI: docker stop -t 10", stops.cli, stopFloor),
        row("agent: pod.stop command (its log)", b.agentLog.since("pod.stop", stopBefore + 1), stopFloor),
        row("API: POST /start answered", starts.api, startFloor),
        row("API: POST /start → page answers via ingress", starts.page, startFloor),
        row("dockerode: start() → port 200", starts.dockerode, startFloor),
        row("CLI: docker start → port 200", starts.cli, startFloor),
        row("agent: pod.start command (its log)", b.agentLog.since("pod.start", startBefore + 1), startFloor),
      ],
    ),
  );
  v.ratio({
    figure: "stop (API) vs dockerode",
    ours: median(stops.api),
    floor: stopFloor,
    target: TARGET.power,
    unit: "ms",
  });
  v.ratio({
    figure: "start (API) vs dockerode → port",
    ours: median(starts.api),
    floor: startFloor,
    target: TARGET.power,
    unit: "ms",
  });
}

/** What the API, the engine, the ingress and the agent's log say about a pod that did not come up. */
async function diagnose(b: Bench, name: string): Promise<string> {
  const pod = await b.api.get(`/api/pods/${name}`);
  const events = await b.api.get(`/api/pods/${name}/events`);
  const eventLines = (events.body?.events ?? []).map(
    (e: { type: string; message: string }) => `${e.type}: ${e.message}`,
  );
  const container = await docker
    .getContainer(`${b.stack.prefix}-${name}`)
    .inspect()
    .then((i) => JSON.stringify(i.State), String);
  const vhost = path.join(b.stack.agentEnv.PODHOST_STATE_DIR ?? "", "nginx", "vhosts", `${name}.conf`);
  const page = await httpGet(b.stack.edgePort, `${name}.${POD_DOMAIN}`).catch(String);
  const log = b.stack.agent.output
    .join("")
    .split("\n")
    .filter((l) => l.includes(name) || l.includes('"level":"error"') || l.includes('"level":"warn"'))
    .slice(-15);
  return [
    `API: ${pod.status} ${JSON.stringify(pod.body)}`,
    `events: ${JSON.stringify(eventLines)}`,
    `container state: ${container}`,
    `vhost file: ${await readFile(vhost, "utf8").then(
      () => "present",
      () => "missing",
    )}`,
    `page: ${JSON.stringify(page)}`,
    "agent log:",
    ...log,
  ].join("\n");
}

/** 4. the host filled to `PODS` pods through the API, `PARALLEL` at a time; then the agent's memory. */
async function fillPhase(b: Bench, idle: { connected: Memory; beforePods: Memory }): Promise<void> {
  const wanted = Math.max(0, PODS - b.pods.length);
  const times: number[] = [];
  const t0 = now();
  let claimed = 0;
  /** why the host took no more pods (a create that ended in `error`), if it came to that */
  let full: string | undefined;
  const creator = async () => {
    while (claimed < wanted && !full) {
      claimed++;
      const name = `lc-f${String(claimed).padStart(2, "0")}`;
      const t = now();
      const res = await b.api.post("/api/pods", { name, preset: "static", plan_slug: "launch" });
      if (res.status !== 202) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      const failed = await waitUp(b, name);
      if (failed) {
        full ??= `${name}: ${failed}`;
        const removed = await b.api.delete(`/api/pods/${name}`);
        if (removed.status !== 200) throw new Error(`delete ${name}: ${removed.status}`);
        return;
      }
      times.push(now() - t);
      b.pods.push(name);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, wanted) }, creator));
  const made = times.length;
  const seconds = (now() - t0) / 1000;
  await waitFor("every pod to be running in the API", async () => {
    const list = await b.api.get("/api/pods?limit=100");
    return list.body?.status_counts?.running === b.pods.length ? true : undefined;
  });
  const filters = { label: [`podhost.prefix=${b.stack.prefix}`], status: ["running"] };
  const running = (await docker.listContainers({ filters })).length;
  await sleep(2_000); // the create bursts' garbage gets a chance to be collected before the reading
  const memory = await memoryOf(b.agentPid);
  const pingFull = await measurePing(b.stack, Math.min(PINGS, 200));

  console.log(
    `\n4. agent memory: ${made} pods created ${PARALLEL} at a time in ${fmt(seconds, 1)} s ` +
      `(${fmt((made / seconds) * 60, 0)} pods/min; POST → page answers p50 ${p50(times)} ms, ` +
      `p90 ${p90(times)} ms); ${running} pod containers running`,
  );
  if (full) console.log(`HOST FULL before ${PODS} pods: ${full}`);
  const memRow = (label: string, m: Memory) => [label, fmt(mb(m.rssKb), 1), fmt(mb(m.hwmKb), 1)];
  console.log(
    `\n${formatTable(
      ["agent process (node dist/agent/main.js)", "VmRSS MB", "VmHWM MB"],
      [
        memRow("idle: just connected", idle.connected),
        memRow("idle: before the first pod (after the pings)", idle.beforePods),
        memRow(`${running} running pods`, memory),
      ],
    )}`,
  );
  console.log(`\nround trip again with ${running} pods running:\n`);
  printPing(pingFull);
  if (running < TARGET.rssPods) {
    console.log(
      `\nthe RSS target is for ${TARGET.rssPods} running pods: ${running} ran ` +
        `(${PODS < TARGET.rssPods ? `--pods ${PODS}` : "see above"}), so it is NOT MET`,
    );
  }
  v.absolute({
    figure:
      running >= TARGET.rssPods
        ? `agent RSS with ${running} running pods`
        : `agent RSS with ${running} running pods (${fmt(mb(memory.rssKb), 1)} MB; the target is with ${TARGET.rssPods})`,
    // fewer pods than the target names cannot pass
    value: running >= TARGET.rssPods ? mb(memory.rssKb) : Number.NaN,
    limit: TARGET.rssMb,
    unit: "MB",
  });
}

/**
 * Until the pod's page answers (undefined) or its create ended in `error` (the reason, from its events).
 * The page is polled every 50 ms, the API every second.
 */
async function waitUp(b: Bench, name: string): Promise<string | undefined> {
  const deadline = now() + 120_000;
  for (let i = 0; now() < deadline; i++) {
    const page = await httpGet(b.stack.edgePort, `${name}.${POD_DOMAIN}`).catch(() => null);
    if (page?.status === 200) return undefined;
    if (i % 20 === 19 && (await b.api.get(`/api/pods/${name}`)).body?.status === "error") {
      const events = await b.api.get(`/api/pods/${name}/events?type=error`);
      return events.body?.events?.[0]?.message ?? "status error";
    }
    await sleep(50);
  }
  throw new Error(`${name} did not come up within 120 s\n${await diagnose(b, name)}`);
}

async function main() {
  const t0 = now();
  // Same note as bench/api.ts: on a machine busier than its CPUs, every figure here is inflated.
  console.log(`at start: ${machineLoad()}`);
  const stack = await startStack("bench");
  const floor = new Floor(stack.prefix);
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      await floor.removeAll().catch((e: unknown) => console.error(`floor cleanup: ${String(e)}`));
      await stack.stop();
    })();
    return cleaned;
  };
  process.once("SIGINT", () => {
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    const agentPid = stack.agent.child.pid;
    if (!agentPid) throw new Error("the agent did not start");
    const b: Bench = {
      stack,
      api: await benchUser(stack),
      floor,
      agentLog: watchAgentCommands(stack),
      agentPid,
      pods: [],
    };
    const connected = await memoryOf(agentPid);
    console.log(
      `stack up in ${fmt((now() - t0) / 1000, 1)} s (prefix ${stack.prefix}, agent pid ${agentPid})`,
    );

    // 3 first, while the host has no pods.
    const ping = await measurePing(stack, PINGS);
    const beforePods = await memoryOf(agentPid);
    await createPhase(b);
    await powerPhase(b);

    console.log(
      `\n3. no-op command round trip, sequential (1 client, keep-alive), ${PINGS} per route after 100 ` +
        "warm-up, measured before any pod existed\n",
    );
    printPing(ping);
    v.added({
      figure: "/agent/ping p50 over /health",
      ours: ping.rows[2]?.s.p50 ?? Number.NaN,
      floor: ping.rows[0]?.s.p50 ?? Number.NaN,
      limit: TARGET.pingAddedMs,
      unit: "ms",
    });

    await fillPhase(b, { connected, beforePods });
    console.log(`\nat end: ${machineLoad()}; ${fmt((now() - t0) / 1000, 1)} s before cleanup`);
    v.finish();
  } finally {
    const tc = now();
    await cleanup();
    console.log(`cleaned up in ${fmt((now() - tc) / 1000, 1)} s`);
  }
}

/** A user whose active team is one made for the bench, once the host is online. */
async function benchUser(stack: Stack): Promise<Api> {
  const user = await signUp(stack.api, "Bench");
  const team = await user.api.post("/api/teams", { name: "Lifecycle bench" });
  if (team.status !== 201) throw new Error(`team: ${team.status} ${JSON.stringify(team.body)}`);
  const switched = await user.api.post("/api/teams/switch", { team_id: team.body.id });
  if (switched.status !== 200) throw new Error(`switch: ${switched.status} ${JSON.stringify(switched.body)}`);
  await waitFor("the host to come online", async () => {
    const res = await user.api.get("/api/regions");
    const region = res.body.regions?.find((r: { slug: string }) => r.slug === "eu-central");
    return region?.available ? true : undefined;
  }).catch((err: unknown) => {
    throw new Error(`${String(err)}; the agent said:\n${stack.agent.output.join("").slice(-3000)}`);
  });
  return user.api;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
