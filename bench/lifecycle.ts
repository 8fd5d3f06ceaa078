/**
 * Pod lifecycle bench: what the control plane adds on top of Docker, on the real stack (Worker in workerd
 * + registered host + agent process + Docker engine + nginx ingress), each figure beside its floor measured
 * in the same run.
 *
 *   tsx bench/lifecycle.ts [--reps 7] [--pings 300] [--pods 50] [--parallel 4]
 *
 * 1. create → running: POST /api/pods, then GET /api/pods/{name} every 20 ms until `running`, and the
 *    pod's page through the ingress every 10 ms until 200. Floors: the same container made directly —
 *    with dockerode (the client the agent uses: network, volume, create, start, then the web port polled
 *    every 10 ms until it answers 200) and with the docker CLI (`network create`, `volume create`,
 *    `run -d`, same poll). Both use the agent's own `containerCreateOptions` (same image, user, caps,
 *    read-only root, tmpfs, limits, own network, named volume). Target: API ≤ 1.5x the dockerode floor.
 * 2. stop / start: POST /api/pods/{name}/stop and /start (each answers once the host confirmed; start
 *    once the web port answers) beside `stop` / `start` of an equivalent container with dockerode and
 *    with the CLI, start measured until the port answers 200. Target: ≤ 1.3x the dockerode floor.
 * 3. no-op command round trip: GET /agent/ping (Worker → HostAgent DO → agent over WebSocket → back)
 *    beside the same Worker's bare GET /health, sequential, in interleaved rounds after a warm-up.
 *    Target: adds ≤ 5 ms at p50.
 * 4. the agent's RSS (VmRSS of its process) idle and with `--pods` running pods, created through the API
 *    `--parallel` at a time in a team made for the bench. Target: ≤ 150 MB with 50 pods.
 *
 * Where the time of a create goes: the floor's steps are timed one by one, plus a `putArchive` of the
 * files the agent writes (timed but not part of the floor), plus an nginx vhost upsert (render, `nginx -t`,
 * reload, wait for the old workers) on a bench-owned ingress with the agent's own Ingress class, with 1
 * and with `--pods` vhosts; the agent's own figure per command comes from its "command done" log lines.
 *
 * Variants take turns inside each repetition (in rotating order), so drift on a busy machine spreads over
 * all of them. Everything is removed at the end, also on failure or Ctrl-C.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import type { ContainerCreateOptions } from "dockerode";
import { createDockerClient, type DockerClient } from "../agent/docker/client";
import { containerCreateOptions } from "../agent/docker/container-spec";
import { HOME, podLabels, podNames } from "../agent/docker/naming";
import { podFileEntries } from "../agent/docker/pod-files";
import { buildTar } from "../agent/docker/tar";
import { Ingress } from "../agent/ingress/nginx";
import { renderVhost } from "../agent/ingress/vhost";
import { createLogger } from "../agent/logger";
import { findPlan } from "../shared/catalog";
import type { PodSpec } from "../shared/protocol";
import { type apiClient, signUp } from "../test/e2e/support/api";
import { getThroughIngress } from "../test/e2e/support/ingress";
import { freePort, type Stack, sleep, startStack, waitFor } from "../test/e2e/support/stack";
import { podSpec } from "../worker/services/pods/spec";
import { fmt, formatTable, median, percentile, summarize } from "./stats";
import { keepAliveAgent, runLoad } from "./support/load";

const TARGET = { create: 1.5, power: 1.3, pingAddedMs: 5, rssMb: 150 };
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
const positiveInt = (name: string, v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name}: expected a positive integer, got ${v}`);
  return n;
};
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

/** VmRSS and VmHWM of a process in kB. */
async function memoryOf(pid: number): Promise<{ rssKb: number; hwmKb: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssKb: field("VmRSS"), hwmKb: field("VmHWM") };
}

/** The agent's "command done" log lines: op → pod → ms of its last run (the agent's own view of a command). */
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
        if (entry.op && typeof entry.ms === "number")
          done.set(entry.op, [...(done.get(entry.op) ?? []), entry.ms]);
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
  return podSpec({ podId: "pod_benchfloor", name, preset: "static", plan, podDomain: POD_DOMAIN });
}

/** The CLI flags for the same container as `containerCreateOptions` (kept in step by deriving them from it). */
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
    ...((h.SecurityOpt ?? []) as string[]).flatMap((s) => ["--security-opt", s]),
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
    await docker.getContainer(n.container).putArchive(buildTar(podFileEntries(spec)), { path: HOME });
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
  async removeAll() {
    const filters = { label: [`podhost.prefix=${this.prefix}`] };
    const quiet = () => undefined;
    for (const c of await docker.listContainers({ all: true, filters })) {
      await docker.getContainer(c.Id).remove({ force: true }).catch(quiet);
    }
    for (const v of (await docker.listVolumes({ filters })).Volumes ?? []) {
      await docker.getVolume(v.Name).remove().catch(quiet);
    }
    for (const net of await docker.listNetworks({ filters })) {
      await docker.getNetwork(net.Id).remove().catch(quiet);
    }
  }
}

// ------------------------------------------------------------------------------------------ the API side

type Api = ReturnType<typeof apiClient>;

interface ApiCreate {
  post: number;
  running: number;
  page: number;
}

/** POST the pod, then poll the API (20 ms) and the page through the ingress (10 ms) side by side. */
async function createThroughApi(api: Api, stack: Stack, name: string): Promise<ApiCreate> {
  const t0 = now();
  const res = await api.post("/api/pods", { name, preset: "static", plan_slug: "launch" });
  const post = now() - t0;
  if (res.status !== 202) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  const [running, page] = await Promise.all([
    until(
      `${name} running`,
      async () => {
        const got = await api.get(`/api/pods/${name}`);
        if (got.body?.status === "error") throw new Error(`${name} failed: ${JSON.stringify(got.body)}`);
        return got.status === 200 && got.body?.status === "running";
      },
      API_POLL_MS,
    ),
    pageAnswers(stack, name, PAGE_POLL_MS),
  ]);
  return { post, running: running - t0, page: page - t0 };
}

const pageAnswers = (stack: Stack, name: string, intervalMs: number) =>
  until(
    `${name}'s page`,
    async () => {
      const page = await getThroughIngress(stack.ingressPort, `${name}.${POD_DOMAIN}`).catch(() => null);
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

const ms = (samples: number[]) => fmt(median(samples), 0);
const p90 = (samples: number[]) => fmt(percentile(samples, 90), 0);
const ratio = (a: number, b: number) => `${fmt(a / b)}x`;

interface Verdict {
  target: string;
  measured: string;
  met: boolean;
}

// ------------------------------------------------------------------------------------------------- phases

/** The same vhost upsert the agent does on create, on a bench-owned nginx: with 1 vhost, then with `many`. */
async function measureVhostUpserts(many: number, reps: number) {
  const stateDir = await mkdtemp(path.join(tmpdir(), "podhost-bench-ingress-"));
  const listen = `127.0.0.1:${await freePort()}`;
  const ingress = new Ingress({ stateDir, listen, log: createLogger({}, true) });
  const spec = { pod: "bench", podId: "pod_bench", domains: [`bench.${POD_DOMAIN}`], ip: "10.254.0.2" };
  const timed = async () => {
    const out: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = now();
      await ingress.upsert({ ...spec, port: 8080 + (i % 2) }); // a changed file: test + reload every time
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
      const text = renderVhost(listen, {
        pod,
        podId: `pod_${i}`,
        domains: [`${pod}.${POD_DOMAIN}`],
        ip: `10.254.${1 + Math.floor(i / 250)}.${(i % 250) + 2}`,
        port: 8080,
      });
      await writeFile(ingress.vhostPath(pod), text);
    }
    const withMany = await timed();
    return { one, withMany };
  } finally {
    await ingress.stop().catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
  }
}

async function main() {
  const t0 = now();
  console.log(
    `load average at start: ${loadavg()
      .map((l) => fmt(l))
      .join(" ")} (2 cores)`,
  );
  const stack = await startStack("bench");
  const floor = new Floor(stack.prefix);
  const agentLog = watchAgentCommands(stack);
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

  const verdicts: Verdict[] = [];
  try {
    const user = await signUp(stack.api, "Bench");
    const team = await user.api.post("/api/teams", { name: "Lifecycle bench" });
    if (team.status !== 201) throw new Error(`team: ${team.status} ${JSON.stringify(team.body)}`);
    const switched = await user.api.post("/api/teams/switch", { team_id: team.body.id });
    if (switched.status !== 200)
      throw new Error(`switch: ${switched.status} ${JSON.stringify(switched.body)}`);
    const api = user.api;
    await waitFor("the host to come online", async () => {
      const res = await api.get("/api/regions");
      return res.body.regions?.find((r: { slug: string; available: boolean }) => r.slug === "eu-central")
        ?.available
        ? true
        : undefined;
    });
    const pid = stack.agent.child.pid;
    if (!pid) throw new Error("agent has no pid");
    const idle = await memoryOf(pid);
    console.log(
      `stack up in ${fmt((now() - t0) / 1000, 1)} s (prefix ${stack.prefix}); agent pid ${pid}, ` +
        `idle RSS ${fmt(mb(idle.rssKb), 1)} MB`,
    );

    // ---- 3 first, on a quiet host: the no-op round trip
    const ping = await measurePing(stack, user.token, PINGS);

    // ---- 1. create
    let podCount = 0;
    const podName = () => `lc-${String(++podCount).padStart(2, "0")}`;
    const created: string[] = [];
    const apiCreates: ApiCreate[] = [];
    const dockerodeCreates: FloorSteps[] = [];
    const cliCreates: { run: number; total: number }[] = [];
    const createOps = agentLog.count("pod.create");
    let floorCount = 0;
    const variants = [
      async (timed: boolean) => {
        const name = podName();
        const r = await createThroughApi(api, stack, name);
        created.push(name);
        if (timed) apiCreates.push(r);
      },
      async (timed: boolean) => {
        const pod = `c${++floorCount}`;
        const r = await floor.createWithDockerode(pod);
        await floor.remove(pod);
        if (timed) dockerodeCreates.push(r);
      },
      async (timed: boolean) => {
        const pod = `c${++floorCount}`;
        const r = await floor.createWithCli(pod);
        await floor.remove(pod);
        if (timed) cliCreates.push(r);
      },
    ];
    for (const v of variants) await v(false); // warm-up: image layers, engine caches, JIT, the DO
    for (let rep = 0; rep < REPS; rep++) {
      for (let i = 0; i < variants.length; i++) await variants[(i + rep) % variants.length]?.(true);
    }
    const agentCreateMs = agentLog.since("pod.create", createOps + 1); // without the warm-up's
    const vhost = await measureVhostUpserts(PODS, 5);

    const createFloor = median(dockerodeCreates.map((s) => s.total));
    const cliFloor = median(cliCreates.map((s) => s.total));
    const apiRunning = apiCreates.map((c) => c.running);
    const apiPage = apiCreates.map((c) => c.page);
    console.log(
      `\n1. create → running (static preset, launch plan), ${REPS} reps after 1 warm-up; API polled every ` +
        `${API_POLL_MS} ms, pages every ${PAGE_POLL_MS} ms\n`,
    );
    const createRow = (label: string, samples: number[]) => [
      label,
      String(samples.length),
      ms(samples),
      p90(samples),
      ratio(median(samples), createFloor),
      ratio(median(samples), cliFloor),
    ];
    console.log(
      formatTable(
        ["path", "n", "p50 ms", "p90 ms", "vs dockerode", "vs CLI"],
        [
          createRow(
            "API: POST answered (202)",
            apiCreates.map((c) => c.post),
          ),
          createRow("API: POST → GET says running", apiRunning),
          createRow("API: POST → page answers via ingress", apiPage),
          createRow(
            "dockerode: net+vol+create+start → port 200",
            dockerodeCreates.map((s) => s.total),
          ),
          createRow(
            "CLI: network/volume create + run -d → port 200",
            cliCreates.map((s) => s.total),
          ),
        ],
      ),
    );
    const step = (label: string, samples: number[], note = "") => [label, ms(samples), p90(samples), note];
    console.log("\nwhere a create's time goes (medians, ms)\n");
    console.log(
      formatTable(
        ["step", "p50 ms", "p90 ms", "note"],
        [
          step(
            "network create",
            dockerodeCreates.map((s) => s.network),
            "dockerode",
          ),
          step(
            "volume create",
            dockerodeCreates.map((s) => s.volume),
            "dockerode",
          ),
          step(
            "container create",
            dockerodeCreates.map((s) => s.create),
            "dockerode",
          ),
          step(
            "putArchive of the agent's files",
            dockerodeCreates.map((s) => s.putArchive),
            "not in the floor",
          ),
          step(
            "container start",
            dockerodeCreates.map((s) => s.start),
            "dockerode",
          ),
          step(
            "inspect for the address",
            dockerodeCreates.map((s) => s.ip),
            "dockerode",
          ),
          step(
            "start → web port answers 200",
            dockerodeCreates.map((s) => s.port),
            `polled every ${PAGE_POLL_MS} ms`,
          ),
          step(
            "CLI: docker run -d alone",
            cliCreates.map((s) => s.run),
            "create + start",
          ),
          step("vhost upsert, 1 vhost", vhost.one, "write, nginx -t, reload, old workers gone"),
          step(`vhost upsert, ${PODS} vhosts`, vhost.withMany, "same, with a full host"),
          step("agent: pod.create command", agentCreateMs, "its own log, dispatch → result"),
          step(
            "API running − agent command",
            apiRunning.map((r, i) => r - (agentCreateMs[i] ?? Number.NaN)),
            "POST, DO, D1 writes, poll granularity",
          ),
        ],
      ),
    );
    verdicts.push({
      target: `create ≤ ${TARGET.create}x floor (API says running vs dockerode → port)`,
      measured: `${fmt(median(apiRunning), 0)} vs ${fmt(createFloor, 0)} ms = ${ratio(median(apiRunning), createFloor)}`,
      met: median(apiRunning) / createFloor <= TARGET.create,
    });

    // ---- 2. stop / start
    const pod = created[0];
    if (!pod) throw new Error("no pod to stop and start");
    const floorPod = "ss";
    await floor.createWithDockerode(floorPod);
    const stopOps = agentLog.count("pod.stop");
    const startOps = agentLog.count("pod.start");
    const apiStop: number[] = [];
    const apiStart: number[] = [];
    const apiStartPage: number[] = [];
    const dStop: number[] = [];
    const dStart: number[] = [];
    const cStop: number[] = [];
    const cStart: number[] = [];
    const powerVariants = [
      async (timed: boolean) => {
        const stop = await power(api, pod, "stop");
        const t = now();
        const start = await power(api, pod, "start");
        const page = (await pageAnswers(stack, pod, PAGE_POLL_MS)) - t;
        if (timed) {
          apiStop.push(stop);
          apiStart.push(start);
          apiStartPage.push(page);
        }
      },
      async (timed: boolean) => {
        const stop = await floor.stopWithDockerode(floorPod);
        const start = await floor.startWithDockerode(floorPod);
        if (timed) {
          dStop.push(stop);
          dStart.push(start);
        }
      },
      async (timed: boolean) => {
        const stop = await floor.stopWithCli(floorPod);
        const start = await floor.startWithCli(floorPod);
        if (timed) {
          cStop.push(stop);
          cStart.push(start);
        }
      },
    ];
    for (const v of powerVariants) await v(false);
    for (let rep = 0; rep < REPS; rep++) {
      for (let i = 0; i < powerVariants.length; i++)
        await powerVariants[(i + rep) % powerVariants.length]?.(true);
    }
    await floor.remove(floorPod);
    const agentStop = agentLog.since("pod.stop", stopOps + 1);
    const agentStart = agentLog.since("pod.start", startOps + 1);
    const stopFloor = median(dStop);
    const startFloor = median(dStart);
    console.log(
      `\n2. stop and start, ${REPS} reps after 1 warm-up (start: until the web port answers 200)\n`,
    );
    const powerRow = (label: string, samples: number[], floorMs: number) => [
      label,
      String(samples.length),
      ms(samples),
      p90(samples),
      ratio(median(samples), floorMs),
    ];
    console.log(
      formatTable(
        ["path", "n", "p50 ms", "p90 ms", "vs dockerode"],
        [
          powerRow("API: POST /stop answered", apiStop, stopFloor),
          powerRow("dockerode: stop({t: 10})", dStop, stopFloor),
          powerRow("CLI: docker stop -t 10", cStop, stopFloor),
          powerRow("agent: pod.stop command (its log)", agentStop, stopFloor),
          powerRow("API: POST /start answered", apiStart, startFloor),
          powerRow("API: POST /start → page answers via ingress", apiStartPage, startFloor),
          powerRow("dockerode: start() → port 200", dStart, startFloor),
          powerRow("CLI: docker start → port 200", cStart, startFloor),
          powerRow("agent: pod.start command (its log)", agentStart, startFloor),
        ],
      ),
    );
    verdicts.push(
      {
        target: `stop ≤ ${TARGET.power}x floor (API vs dockerode)`,
        measured: `${fmt(median(apiStop), 0)} vs ${fmt(stopFloor, 0)} ms = ${ratio(median(apiStop), stopFloor)}`,
        met: median(apiStop) / stopFloor <= TARGET.power,
      },
      {
        target: `start ≤ ${TARGET.power}x floor (API vs dockerode → port)`,
        measured: `${fmt(median(apiStart), 0)} vs ${fmt(startFloor, 0)} ms = ${ratio(median(apiStart), startFloor)}`,
        met: median(apiStart) / startFloor <= TARGET.power,
      },
    );

    // ---- 3. print the round trip measured at the start
    console.log(
      `\n3. no-op command round trip, sequential (1 client, keep-alive), ${PINGS} per route after a warm-up, ` +
        "measured before any pod existed\n",
    );
    printPing(ping);
    verdicts.push({
      target: `/agent/ping adds ≤ ${TARGET.pingAddedMs} ms p50 over /health`,
      measured: `+${fmt(ping.added)} ms (p50 ${fmt(ping.rows[1]?.s.p50 ?? Number.NaN)} vs ${fmt(ping.rows[0]?.s.p50 ?? Number.NaN)})`,
      met: ping.added <= TARGET.pingAddedMs,
    });

    // ---- 4. fill the host to PODS pods, then the agent's memory
    const remaining = Math.max(0, PODS - created.length);
    const fillTimes: number[] = [];
    const tFill = now();
    let next = 0;
    const worker = async () => {
      while (next < remaining) {
        next++;
        const name = podName();
        const t = now();
        const res = await api.post("/api/pods", { name, preset: "static", plan_slug: "launch" });
        if (res.status !== 202) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
        await pageAnswers(stack, name, 50);
        fillTimes.push(now() - t);
        created.push(name);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, remaining) }, worker));
    const fillSeconds = (now() - tFill) / 1000;
    await waitFor("every pod to be running in the API", async () => {
      const list = await api.get("/api/pods?limit=100");
      return list.body?.status_counts?.running === created.length ? true : undefined;
    });
    const running = (await docker.listContainers({ filters: { label: [`podhost.prefix=${stack.prefix}`] } }))
      .length;
    await sleep(2_000); // let the create bursts' garbage be collected before reading
    const full = await memoryOf(pid);
    const pingFull = await measurePing(stack, user.token, Math.min(PINGS, 200));
    console.log(
      `\n4. agent memory; ${remaining} pods created ${PARALLEL} at a time in ${fmt(fillSeconds, 1)} s ` +
        `(${fmt((remaining / fillSeconds) * 60, 0)} pods/min; create → page p50 ${ms(fillTimes)} ms, ` +
        `p90 ${p90(fillTimes)} ms); ${running} pod containers running\n`,
    );
    console.log(
      formatTable(
        ["agent process", "VmRSS MB", "VmHWM MB"],
        [
          ["idle, connected, no pods", fmt(mb(idle.rssKb), 1), fmt(mb(idle.hwmKb), 1)],
          [`${created.length} running pods`, fmt(mb(full.rssKb), 1), fmt(mb(full.hwmKb), 1)],
        ],
      ),
    );
    console.log(`\nround trip again with ${created.length} pods running:\n`);
    printPing(pingFull);
    verdicts.push({
      target: `agent RSS ≤ ${TARGET.rssMb} MB with ${created.length} pods`,
      measured: `${fmt(mb(full.rssKb), 1)} MB (idle ${fmt(mb(idle.rssKb), 1)}, peak ${fmt(mb(full.hwmKb), 1)})`,
      met: mb(full.rssKb) <= TARGET.rssMb && running >= PODS,
    });

    console.log("\nsummary\n");
    console.log(
      formatTable(
        ["target", "measured", "met"],
        verdicts.map((v) => [v.target, v.measured, v.met ? "MET" : "NOT MET"]),
      ),
    );
    console.log(
      `\nload average at end: ${loadavg()
        .map((l) => fmt(l))
        .join(" ")} — total ` + `${fmt((now() - t0) / 1000, 1)} s before cleanup`,
    );
  } finally {
    const tc = now();
    await cleanup();
    console.log(`cleaned up in ${fmt((now() - tc) / 1000, 1)} s`);
  }
}

interface PingResult {
  rows: { label: string; s: ReturnType<typeof summarize> }[];
  added: number;
}

/** /health, /agent/ping and (for the auth share of the cost) /api/auth/user, sequential, interleaved rounds. */
async function measurePing(stack: Stack, userToken: string, requests: number): Promise<PingResult> {
  const routes: { label: string; path: string; headers: Record<string, string> }[] = [
    { label: "GET /health (bare)", path: "/health", headers: {} },
    {
      label: "GET /agent/ping (DO → agent → back)",
      path: "/agent/ping",
      headers: { authorization: `Bearer ${stack.agentEnv.PODHOST_AGENT_TOKEN}` },
    },
    {
      label: "GET /api/auth/user (auth + D1, reference)",
      path: "/api/auth/user",
      headers: { authorization: `Bearer ${userToken}` },
    },
  ];
  const agent = keepAliveAgent(1);
  const ROUNDS = 5;
  try {
    const load = async (r: (typeof routes)[number], n: number) => {
      const res = await runLoad({
        url: `${stack.api}${r.path}`,
        headers: r.headers,
        requests: n,
        concurrency: 1,
        agent,
      });
      if (res.failures > 0)
        throw new Error(`${r.label}: ${res.failures} failed: ${JSON.stringify(res.firstFailure)}`);
      return res.latencies;
    };
    for (const r of routes) await load(r, 100);
    const samples = routes.map(() => [] as number[]);
    const perRound = Math.ceil(requests / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < routes.length; i++) {
        const k = (i + round) % routes.length;
        const r = routes[k];
        if (r) samples[k]?.push(...(await load(r, perRound)));
      }
    }
    const rows = routes.map((r, i) => ({ label: r.label, s: summarize(samples[i] ?? []) }));
    const added = (rows[1]?.s.p50 ?? Number.NaN) - (rows[0]?.s.p50 ?? Number.NaN);
    return { rows, added };
  } finally {
    agent.destroy();
  }
}

function printPing({ rows }: PingResult) {
  const bare = rows[0]?.s.p50 ?? Number.NaN;
  console.log(
    formatTable(
      ["route", "n", "p50 ms", "p99 ms", "p50 added ms", "p50 vs bare"],
      rows.map(({ label, s }) => [
        label,
        String(s.count),
        fmt(s.p50),
        fmt(s.p99),
        fmt(s.p50 - bare),
        ratio(s.p50, bare),
      ]),
    ),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
