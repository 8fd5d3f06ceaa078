import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ContainerInspectInfo, ContainerStats } from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { classify } from "../../agent/health/classify";
import { gatherHealthFacts, type HealthFacts, parseSvStatus } from "../../agent/health/facts";
import { HealthMonitor, portAnswers } from "../../agent/health/monitor";
import {
  parseCgroupMounts,
  parseNetDev,
  parseProcCgroup,
  processStart,
  readContainerCgroup,
} from "../../agent/metrics/cgroup";
import { readKernelFile } from "../../agent/metrics/kernel-file";
import { listPods, PodLister, type RunningPod } from "../../agent/metrics/running-pods";
import { computeSample, MetricsSampler, readingOf } from "../../agent/metrics/sampler";
import type { Diagnosis } from "../../shared/protocol/health";
import { type Agent, httpGet, podSpec, startAgent, until } from "./helpers";

/**
 * The periodic watch's two halves against real pods: the metrics sampler's figures, and the
 * health classifier and its fixes on apps broken the usual ways. Three Node.js pods are shared by
 * the tests (each case rewrites the app it needs).
 */

const LIMITS = { cpu: 0.5, memoryMb: 256, diskGb: 5, pids: 128 };
const MB = 1024 * 1024;

describe("sample arithmetic (no Docker)", () => {
  const info = { HostConfig: { NanoCpus: 0.5e9, Memory: 512 * MB } } as unknown as ContainerInspectInfo;
  const stats = (at: number, cpuNs: number, rx: number, tx: number, usage = 300 * MB) =>
    ({
      read: new Date(at).toISOString(),
      cpu_stats: { cpu_usage: { total_usage: cpuNs }, online_cpus: 2 },
      memory_stats: { usage, limit: 2048 * MB, stats: { total_inactive_file: 44 * MB } },
      networks: { eth0: { rx_bytes: rx, tx_bytes: tx } },
    }) as unknown as ContainerStats;
  const started = Date.parse("2026-01-01T00:00:00Z");
  const t0 = started + 3_600_000;

  it("takes CPU and network as deltas over the interval, memory against the plan's limit", () => {
    const previous = { startedAt: started, readAt: t0, cpuNs: 1e9, rx: 1_000, tx: 2_000 };
    const { sample } = computeSample(previous, stats(t0 + 2_000, 1.5e9, 1_500, 2_600), info, started);
    // 0.5 s of CPU in 2 s, of 0.5 CPUs allocated
    expect(sample).toEqual({ at: t0 + 2_000, cpu: 50, memory: 50, netIn: 500, netOut: 600 });
  });

  it("counts a restarted container's counters from zero, never negative", () => {
    const previous = { startedAt: started, readAt: t0, cpuNs: 9e9, rx: 90_000, tx: 80_000 };
    const restartedAt = t0 + 1_000;
    const { sample } = computeSample(previous, stats(t0 + 2_000, 0.25e9, 100, 50), info, restartedAt);
    expect(sample).toMatchObject({ cpu: 50, netIn: 100, netOut: 50 });
  });

  it("reports no traffic for a long-running container seen for the first time", () => {
    const { sample } = computeSample(undefined, stats(t0, 1e9, 5e9, 7e9), info, started);
    expect(sample).toMatchObject({ netIn: 0, netOut: 0 });
    expect(sample.cpu).toBeGreaterThanOrEqual(0);
  });
});

describe("cgroup files (no Docker)", () => {
  it("finds v1 controllers and the unified hierarchy in mountinfo, co-mounted controllers too", () => {
    const { v1, v2 } = parseCgroupMounts(
      [
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
      ].join("\n"),
    );
    expect(v1.get("cpu")).toEqual(["/sys/fs/cgroup/cpu,cpuacct", "/"]);
    expect(v1.get("cpuacct")).toEqual(["/sys/fs/cgroup/cpu,cpuacct", "/"]);
    expect(v1.get("memory")).toEqual(["/sys/fs/cgroup/memory", "/"]);
    expect(v2).toEqual(["/sys/fs/cgroup/unified", "/"]);
  });

  it("reads a process's cgroups, v1 and v2", () => {
    const v1 = parseProcCgroup("4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n");
    expect(v1.get("memory")).toBe("/docker/abc");
    expect(v1.get("cpuacct")).toBe("/docker/abc");
    expect(v1.get("")).toBe("/");
    expect(parseProcCgroup("0::/system.slice/docker-abc.scope\n").get("")).toBe(
      "/system.slice/docker-abc.scope",
    );
  });

  it("sums the interfaces' bytes without loopback", () => {
    const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     900      9    0    0    0     0          0         0      900       9    0    0    0     0       0          0
  eth0:    1500     12    0    0    0     0          0         0     2600      14    0    0    0     0       0          0
  eth1:     100      1    0    0    0     0          0         0       50       1    0    0    0     0       0          0
`;
    expect(parseNetDev(netDev)).toEqual({ rx: 1600, tx: 2650 });
  });

  it("reads kernel files whole, also past its buffer, and says when one is missing", () => {
    expect(readKernelFile(`/proc/${process.pid}/stat`)).toMatch(new RegExp(`^${process.pid} \\(`));
    // longer than the reused 16 KiB buffer
    const mountinfo = readFileSync("/proc/self/mountinfo", "utf8");
    const long = "x".repeat(40_000);
    const dir = mkdtempSync(path.join(tmpdir(), "kernel-file-"));
    writeFileSync(path.join(dir, "big"), long);
    expect(readKernelFile(path.join(dir, "big"))).toBe(long);
    rmSync(dir, { recursive: true });
    expect(readKernelFile("/proc/self/mountinfo").split("\n")[0]).toBe(mountinfo.split("\n")[0]);
    expect(() => readKernelFile(`/proc/${2 ** 22 + 1}/stat`)).toThrow(/ENOENT/);
  });

  it("tells this process's start apart from no process", async () => {
    expect(await processStart(process.pid)).toMatch(/^\d+$/);
    expect(await processStart(process.pid)).toBe(await processStart(process.pid));
    expect(await processStart(0)).toBeNull();
    expect(await processStart(2 ** 22 + 1)).toBeNull();
  });
});

describe("health classification rules (no Docker)", () => {
  const facts = (over: Partial<HealthFacts>): HealthFacts => ({
    service: "app",
    status: { state: "run", pid: 10, seconds: 30 },
    listeners: [],
    ownershipKnown: false,
    oomKills: 0,
    files: new Set(),
    mainEntry: null,
    packageJson: null,
    requirements: null,
    logLines: [],
    ...over,
  });
  const now = Date.parse("2026-01-01T12:00:00Z");
  const run = (line: string) => [
    "[podhost] 2026-01-01T11:59:50Z starting (Python 3.11.2): python app.py",
    line,
  ];

  it("parses runit's status lines", () => {
    expect(parseSvStatus("run: app: (pid 31) 12s; run: log: (pid 2) 40s")).toEqual({
      state: "run",
      pid: 31,
      seconds: 12,
    });
    expect(parseSvStatus("down: app: 3s, normally up")).toEqual({ state: "down", pid: null, seconds: 3 });
    expect(parseSvStatus("fail: app: unable to change to service directory")).toMatchObject({
      state: "unknown",
    });
  });

  it("Python: a module requirements.txt lists is an install away; one it does not list is not", () => {
    const missing = "ModuleNotFoundError: No module named 'flask'";
    const listed = classify({
      name: "py",
      facts: facts({
        logLines: run(missing),
        requirements: "Flask==3.0.0\n",
        files: new Set(["requirements.txt", "app.py"]),
      }),
      preset: "python",
      port: 8000,
      now,
    });
    expect(listed).toMatchObject({
      class: "missing_module",
      auto_fixable: true,
      fix_action: "install_dependencies",
    });
    expect(listed.fix).toContain("/api/pods/py/diagnosis/fix");
    const unlisted = classify({
      name: "py",
      facts: facts({
        logLines: run(missing),
        requirements: "requests\n",
        files: new Set(["requirements.txt", ".venv"]),
      }),
      preset: "python",
      port: 8000,
      now,
    });
    expect(unlisted).toMatchObject({ class: "missing_module", auto_fixable: false });
  });

  it("Node.js: a missing relative file is not a dependency to install", () => {
    const d = classify({
      name: "n",
      facts: facts({
        logLines: run("Error: Cannot find module './routes/users'"),
        files: new Set(["server.js"]),
      }),
      preset: "nodejs",
      port: 3000,
      now,
    });
    expect(d).toMatchObject({ class: "missing_module", auto_fixable: false });
  });

  it("out of memory wins over what follows from it; an app up and silent is not_responding", () => {
    const oom = classify({
      name: "n",
      facts: facts({
        logLines: run("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"),
      }),
      preset: "nodejs",
      port: 3000,
      now,
    });
    expect(oom).toMatchObject({ class: "out_of_memory", auto_fixable: false });
    const silent = classify({
      name: "n",
      facts: facts({ files: new Set(["server.js"]), ownershipKnown: true }),
      preset: "nodejs",
      port: 3000,
      now,
    });
    expect(silent).toMatchObject({ class: "not_responding", auto_fixable: false });
  });
});

describe("metrics and app health on real pods", () => {
  let agent: Agent;
  const metricsPod = "mh-metrics";
  const fixPod = "mh-fix";
  const portPod = "mh-port";

  const container = (pod: string) => podNames(agent.config.namePrefix, pod).container;

  /** a script as pod_user in ~/app; must succeed */
  const sh = async (pod: string, script: string, ...args: string[]) => {
    const r = await execInContainer(agent.docker, container(pod), ["sh", "-c", script, "sh", ...args], {
      workingDir: "/home/pod_user/app",
    });
    expect(r.exitCode, r.stderr).toBe(0);
    return r.stdout;
  };

  /** started in the background (detached exec), ends on its own */
  const background = async (pod: string, argv: string[]) => {
    const exec = await agent.docker
      .getContainer(container(pod))
      .exec({ Cmd: argv, User: "1000:1000", AttachStdout: false, AttachStderr: false });
    await exec.start({ Detach: true });
  };

  const runningPod = async (name: string): Promise<RunningPod> => {
    const pod = (await listPods(agent.docker, agent.config)).running.find((p) => p.name === name);
    if (!pod) throw new Error(`${name} is not running`);
    return pod;
  };

  const diagnose = async (name: string): Promise<Diagnosis> => {
    const pod = await runningPod(name);
    const facts = await gatherHealthFacts(agent.docker, pod.container, "app");
    return classify({ name, facts, preset: pod.preset, port: 3000, now: Date.now() });
  };

  /** polls the classifier until it names `cls` (an app takes a moment to crash, restart, log) */
  const diagnosisOf = async (name: string, cls: string, also: (d: Diagnosis) => boolean = () => true) => {
    let last: Diagnosis | undefined;
    const found = await until(
      async () => {
        last = await diagnose(name);
        return last.class === cls && also(last) ? last : undefined;
      },
      60_000,
      500,
    );
    if (!found) throw new Error(`expected ${cls}, last diagnosis: ${JSON.stringify(last)}`);
    return found;
  };

  const appAnswers = async (name: string) => {
    const pod = await runningPod(name);
    return until(() => portAnswers(pod.ip ?? "", 3000), 30_000, 250);
  };

  const fix = (name: string, action: "install_dependencies" | "add_start_script" | "forward_port") =>
    agent.handlers["pod.health.fix"]({ name, preset: "nodejs", action }, agent.ctx);

  /** GET / through the ingress */
  const page = (name: string) => httpGet(agent.port, `${name}.pods.test`);

  beforeAll(async () => {
    agent = await startAgent();
    for (const name of [metricsPod, fixPod, portPod]) {
      await agent.handlers["pod.create"](
        podSpec(name, { preset: "nodejs", port: 3000, limits: LIMITS }),
        agent.ctx,
      );
    }
  });

  afterAll(async () => {
    await agent?.cleanup();
  });

  describe("the sampler", () => {
    it("shows a busy loop's CPU and allocated memory as shares of the plan", async () => {
      const sampler = new MetricsSampler({ docker: agent.docker, log: agent.log, storageEveryMs: 60_000 });
      const first = await sampler.sample([await runningPod(metricsPod)]);
      expect(first).toHaveLength(1);
      await background(metricsPod, ["timeout", "20", "sh", "-c", "while :; do :; done"]);
      await new Promise((r) => setTimeout(r, 3_000));
      const [busy] = await sampler.sample([await runningPod(metricsPod)]);
      // 0.5 CPU allocated: a loop that can have it all shows near 100 (the host may be busy too).
      expect(busy?.cpu).toBeGreaterThan(20);
      expect(busy?.cpu).toBeLessThanOrEqual(100);

      await background(metricsPod, [
        "timeout",
        "30",
        "node",
        "-e",
        "const b = Buffer.alloc(100 * 1024 * 1024, 1); setInterval(() => b[0]++, 1000)",
      ]);
      // 100 MB of 256 MB is 39 % (the app and runit add a little).
      const withMemory = await until(
        async () => {
          const [s] = await sampler.sample([await runningPod(metricsPod)]);
          return s && s.memory > 35 ? s : undefined;
        },
        30_000,
        500,
      );
      expect(withMemory?.memory).toBeLessThan(90);
    });

    it("counts the interval's network bytes, and a restart resets nothing into negatives", async () => {
      const sampler = new MetricsSampler({ docker: agent.docker, log: agent.log, storageEveryMs: 60_000 });
      const pod = await runningPod(metricsPod);
      await sampler.sample([pod]);
      for (let i = 0; i < 10; i++) expect((await page(metricsPod)).status).toBe(200);
      const [after] = await sampler.sample([await runningPod(metricsPod)]);
      expect(after?.netIn).toBeGreaterThan(500);
      expect(after?.netOut).toBeGreaterThan(1000);
      // Nothing happens between two reads: (almost) nothing counted.
      const [quiet] = await sampler.sample([await runningPod(metricsPod)]);
      expect(quiet?.netOut).toBeLessThan(after?.netOut ?? 0);

      await agent.docker.getContainer(pod.container).restart({ t: 2 });
      const restarted = await until(async () => {
        const p = await runningPod(metricsPod).catch(() => undefined);
        return p && p.startedAt !== pod.startedAt ? p : undefined;
      });
      if (!restarted) throw new Error("the pod did not come back after its restart");
      const [fresh] = await sampler.sample([restarted]);
      for (const n of [fresh?.cpu, fresh?.memory, fresh?.netIn, fresh?.netOut])
        expect(n).toBeGreaterThanOrEqual(0);
      expect(fresh?.cpu).toBeLessThanOrEqual(100);
    });

    it("reads from the cgroup files what the engine's stats say", async () => {
      // the app answering (it restarted in the case before): some traffic to count
      expect(await appAnswers(metricsPod)).toBe(true);
      const pod = await runningPod(metricsPod);
      const container = agent.docker.getContainer(pod.container);
      const ours = await readContainerCgroup(pod.pid, pod.id);
      const engine = readingOf(
        await container.stats({ stream: false, "one-shot": true }),
        await container.inspect(),
      );
      expect(ours.cpus).toBe(0.5);
      expect(ours.memoryLimit).toBe(256 * MB);
      expect(engine.memoryLimit).toBe(256 * MB);
      // read a moment apart: the engine's read is the later one
      expect(engine.cpuNs).toBeGreaterThanOrEqual(ours.cpuNs);
      expect(engine.cpuNs - ours.cpuNs).toBeLessThan(1e9);
      expect(Math.abs(ours.memoryUsed - engine.memoryUsed)).toBeLessThan(8 * MB);
      expect(ours.rx).toBeGreaterThan(0);
      expect(Math.abs(ours.rx - engine.rx)).toBeLessThan(4096);
      expect(Math.abs(ours.tx - engine.tx)).toBeLessThan(4096);
      // a pid that is not the container's is refused, not read
      await expect(readContainerCgroup(process.pid, pod.id)).rejects.toThrow(/cgroup/);
    });

    it("lists running pods with one container list per look: inspected once per run, again after a restart", async () => {
      let inspects = 0;
      const counting = new Proxy(agent.docker, {
        get(target, prop, receiver) {
          if (prop !== "getContainer") return Reflect.get(target, prop, receiver);
          return (id: string) => {
            const c = target.getContainer(id);
            return new Proxy(c, {
              get(t, p, r) {
                if (p === "inspect") inspects++;
                const v = Reflect.get(t, p, r);
                return typeof v === "function" ? v.bind(t) : v;
              },
            });
          };
        },
      });
      const lister = new PodLister(counting, agent.config);
      const first = (await lister.list()).running.find((p) => p.name === metricsPod);
      const afterFirst = inspects;
      expect(afterFirst).toBeGreaterThan(0);
      const again = (await lister.list()).running.find((p) => p.name === metricsPod);
      expect(inspects).toBe(afterFirst);
      expect(again?.startedAt).toBe(first?.startedAt);
      expect(again?.ip).toBe(first?.ip);

      await agent.docker.getContainer(container(metricsPod)).restart({ t: 2 });
      const restarted = await until(async () => {
        const p = (await lister.list()).running.find((x) => x.name === metricsPod);
        return p && p.startedAt !== first?.startedAt ? p : undefined;
      });
      expect(restarted?.pid).not.toBe(first?.pid);
      expect(inspects).toBeGreaterThan(afterFirst);
      // the pod's new run is read from its new cgroup
      expect((await readContainerCgroup(restarted?.pid ?? 0, restarted?.id ?? "")).cpus).toBe(0.5);
    });

    it("measures the home volume's bytes on disk", async () => {
      await sh(metricsPod, "head -c 20971520 /dev/urandom > ~/big.bin");
      const sampler = new MetricsSampler({ docker: agent.docker, log: agent.log, storageEveryMs: 0 });
      const [s] = await sampler.sample([await runningPod(metricsPod)]);
      expect(s?.storage).toBeGreaterThanOrEqual(20 * MB);
      expect(s?.storage).toBeLessThan(500 * MB);
    });
  });

  describe("the classifier and its fixes (Node.js)", () => {
    it("a dependency in package.json that was never installed → missing_module → install fixes it", async () => {
      await sh(
        fixPod,
        `rm -rf node_modules package-lock.json server.js && mkdir -p greet &&
printf '%s' '{"name":"greet","version":"1.0.0","main":"index.js"}' > greet/package.json &&
printf '%s' 'module.exports = () => "hello from greet";' > greet/index.js &&
printf '%s' '{"name":"app","version":"1.0.0","scripts":{"start":"node server.js"},"dependencies":{"greet":"file:./greet"}}' > package.json &&
printf 'fetch-retries=0\\n' > .npmrc &&
printf '%s' 'const greet = require("greet"); require("http").createServer((q, s) => s.end(greet())).listen(process.env.PORT);' > server.js &&
sv restart app`,
      );
      const d = await diagnosisOf(fixPod, "missing_module");
      expect(d).toMatchObject({ auto_fixable: true, fix_action: "install_dependencies" });
      expect(d.title).toContain("greet");
      expect(d.confidence).toBeGreaterThanOrEqual(0.9);
      expect(d.fix).toContain(`/api/pods/${fixPod}/diagnosis/fix`);

      const fixed = await fix(fixPod, "install_dependencies");
      expect(fixed).toMatchObject({ ok: true, action: "install_dependencies" });
      expect(await appAnswers(fixPod)).toBe(true);
      expect((await page(fixPod)).body).toBe("hello from greet");
    });

    it("package.json without a start script and no default entry → missing_start_script → a start script fixes it", async () => {
      await sh(
        fixPod,
        `rm -rf server.js node_modules greet package-lock.json && mkdir -p src &&
printf '%s' 'require("http").createServer((q, s) => s.end("from src")).listen(process.env.PORT);' > src/index.js &&
printf '{\\n    "name": "app",\\n    "version": "1.0.0"\\n}\\n' > package.json &&
sv restart app`,
      );
      const d = await diagnosisOf(fixPod, "missing_start_script");
      expect(d).toMatchObject({ auto_fixable: true, fix_action: "add_start_script" });
      expect(d.detail).toContain("src/index.js");

      expect(await fix(fixPod, "add_start_script")).toMatchObject({ ok: true, action: "add_start_script" });
      const pkg = JSON.parse(await sh(fixPod, "cat package.json"));
      expect(pkg).toEqual({ name: "app", version: "1.0.0", scripts: { start: "node src/index.js" } });
      expect(await sh(fixPod, "sed -n 2p package.json")).toBe('    "name": "app",\n'); // indentation kept
      expect(await appAnswers(fixPod)).toBe(true);
      expect((await page(fixPod)).body).toBe("from src");
      // Nothing left to fix is a conflict, not a second edit.
      await expect(fix(fixPod, "add_start_script")).rejects.toMatchObject({ code: "conflict" });
    });

    it("an app that throws at start → crash_loop, not fixable; the monitor reports it once", async () => {
      await sh(
        fixPod,
        `printf '%s' 'throw new Error("boom-crash-test");' > crash.js &&
printf '%s' '{"name":"app","version":"1.0.0","scripts":{"start":"node crash.js"}}' > package.json &&
sv restart app`,
      );
      // Restarts of the earlier cases count too: wait for this app's own error in the log.
      const d = await diagnosisOf(fixPod, "crash_loop", (x) => x.detail.includes("boom-crash-test"));
      expect(d.auto_fixable).toBe(false);
      expect(d).not.toHaveProperty("fix_action");
      expect(d.detail).toContain("boom-crash-test");

      const monitor = new HealthMonitor({
        docker: agent.docker,
        log: agent.log,
        graceMs: 0,
        failuresBeforeDiagnosis: 2,
      });
      const pods = async () => [await runningPod(fixPod)];
      // The first failed look is not enough, the second is; then only changes are reported.
      expect(await monitor.check(await pods(), [])).toEqual([]);
      const second = await monitor.check(await pods(), []);
      expect(second).toEqual([{ name: fixPod, diagnosis: expect.objectContaining({ class: "crash_loop" }) }]);
      monitor.commit(second);
      expect(await monitor.check(await pods(), [])).toEqual([]);
      // Stopped: what was said no longer holds.
      expect(await monitor.check([], [fixPod])).toEqual([{ name: fixPod, diagnosis: null }]);
    });

    it("an app that eats its memory limit → out_of_memory, not fixable", async () => {
      await sh(
        fixPod,
        `printf '%s' 'const a = []; setInterval(() => a.push(Buffer.alloc(32 * 1024 * 1024, 1)), 20);' > hog.js &&
printf '%s' '{"name":"app","version":"1.0.0","scripts":{"start":"node hog.js"}}' > package.json &&
sv restart app`,
      );
      const d = await diagnosisOf(fixPod, "out_of_memory");
      expect(d.auto_fixable).toBe(false);
      expect(d.fix).toMatch(/resize/);
      // Leave the pod quiet for the rest of the file.
      await sh(fixPod, 'printf \'%s\' \'{"name":"app","version":"1.0.0"}\' > package.json; sv stop app');
    });

    it("an app on 127.0.0.1 or on another port → port_mismatch → a forwarder fixes both", async () => {
      await sh(
        portPod,
        `printf '%s' 'require("http").createServer((q, s) => s.end("loopback")).listen(3000, "127.0.0.1");' > server.js && sv restart app`,
      );
      const loopback = await diagnosisOf(portPod, "port_mismatch");
      expect(loopback).toMatchObject({ auto_fixable: true, fix_action: "forward_port" });
      expect(loopback.title).toContain("127.0.0.1:3000");
      expect(await fix(portPod, "forward_port")).toMatchObject({ ok: true, action: "forward_port" });
      expect(await until(async () => (await page(portPod)).body === "loopback", 30_000, 250)).toBe(true);

      await sh(
        portPod,
        `printf '%s' 'require("http").createServer((q, s) => s.end("on 8081")).listen(8081);' > server.js && sv restart app`,
      );
      // As the watch would: judged once the port is shut (the forwarder pauses without its target).
      const { ip } = await runningPod(portPod);
      expect(await until(async () => !(await portAnswers(ip ?? "", 3000)), 30_000, 250)).toBe(true);
      const other = await diagnosisOf(portPod, "port_mismatch");
      expect(other.title).toBe("The app listens on port 8081, not 3000");
      expect(other.confidence).toBeGreaterThanOrEqual(0.9);
      const fixed = await fix(portPod, "forward_port");
      expect(fixed).toMatchObject({ ok: true, action: "forward_port" });
      expect(fixed.ok && fixed.detail).toContain("3000 forwarded to 8081");
      expect(await until(async () => (await page(portPod)).body === "on 8081", 30_000, 250)).toBe(true);

      // Healthy now: the monitor says so.
      const monitor = new HealthMonitor({ docker: agent.docker, log: agent.log, graceMs: 0 });
      expect(await monitor.check([await runningPod(portPod)], [])).toEqual([
        { name: portPod, diagnosis: null },
      ]);
    });

    it("refuses a fix for a pod that is not running", async () => {
      await agent.handlers["pod.stop"]({ name: metricsPod }, agent.ctx);
      await expect(fix(metricsPod, "install_dependencies")).rejects.toMatchObject({ code: "bad_request" });
    });
  });
});
