import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import { LABEL_PREFIX, podNames } from "../../agent/docker/naming";
import { listeningPorts } from "../../agent/docker/proc-net";
import { candidateName, HELPER_CANDIDATE, LABEL_GIT_POD } from "../../agent/git/build";
import type { DeployLogMessage } from "../../agent/git/log";
import { DeployLog } from "../../agent/git/log";
import { Redactor } from "../../agent/git/redact";
import { repoTarget } from "../../agent/git/target";
import { removeGitLeftovers } from "../../agent/handlers/git";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { STANDBY_PORT } from "../../agent/ingress/vhost";
import type { DeployOutcome } from "../../shared/protocol/git";
import { type Files, type GitServer, startGitServer } from "../support/git-server";
import { type Agent, httpGet, ms, podSpec, startAgent, until } from "./helpers";

/**
 * Git deployments on the host against a real smart-HTTP git server (test/support/git-server.ts),
 * the real git client and the real Docker engine: fetch, build in the build container, the
 * health-gated switch, failures by class, rollback, limits, and where the token must never be.
 */

const TOKEN = `ghp_test${Math.random().toString(36).slice(2)}SECRET`;

/** A small Node app with one local dependency (no registry needed). */
const nodeApp = (version: string, over: Files = {}): Files => ({
  "package.json": JSON.stringify({
    name: "app",
    version: "1.0.0",
    scripts: { start: "node server.js" },
    dependencies: { greet: "file:./vendor/greet" },
  }),
  "vendor/greet/package.json": JSON.stringify({ name: "greet", version: "1.0.0", main: "index.js" }),
  "vendor/greet/index.js": 'module.exports = () => "hello from greet";\n',
  "server.js": `const http = require("http");
const greet = require("greet");
http.createServer((req, res) => res.end("${version} " + greet() + " " + (process.env.GREETING || "-")))
  .listen(Number(process.env.PORT), "0.0.0.0");
`,
  ...over,
});

/** Requests through the ingress for as long as it runs: every failure is counted. */
function poll(port: number, host: string) {
  let stop = false;
  const bodies = new Set<string>();
  const failures: string[] = [];
  const took: number[] = [];
  let count = 0;
  const t0 = performance.now();
  const done = (async () => {
    while (!stop) {
      try {
        const sent = performance.now();
        const r = await httpGet(port, host);
        took.push(performance.now() - sent);
        count++;
        if (r.status !== 200) failures.push(`+${ms(t0)} ms: ${r.status} ${r.body.slice(0, 40)}`);
        else bodies.add(r.body);
      } catch (e) {
        failures.push(`+${ms(t0)} ms: ${String(e)}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    async end() {
      stop = true;
      await done;
      const sorted = [...took].sort((a, b) => a - b);
      return { count, failures, bodies: [...bodies], p50: sorted[Math.floor(sorted.length / 2)] ?? 0 };
    },
  };
}

describe("deploy log and redaction (no Docker)", () => {
  it("redacts the token in every form, also split across writes and in lines without newlines", () => {
    const sent: DeployLogMessage[] = [];
    const log = new DeployLog("dep_x", new Redactor("s3cr3t-tok"), (m) => sent.push(m) > 0);
    log.write("a s3cr");
    log.write("3t-tok b\n");
    log.write(`${"x".repeat(20_000)}s3cr3t-tok${"y".repeat(20_000)}`);
    log.write(Buffer.from("x-access-token:s3cr3t-tok").toString("base64"));
    const text = log.close();
    expect(text).not.toContain("s3cr3t-tok");
    expect(text).not.toContain(Buffer.from("x-access-token:s3cr3t-tok").toString("base64"));
    expect(text).toContain("a [redacted] b");
    expect(sent.map((m) => m.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.every((m) => m.chunk.length <= 64 * 1024)).toBe(true);
    expect(sent.map((m) => m.chunk).join("")).toBe(text);
  });

  it("keeps what the control socket could not take, and sends it in order once it is back", async () => {
    const sent: DeployLogMessage[] = [];
    let up = false;
    const log = new DeployLog("dep_z", new Redactor(undefined), (m) => up && sent.push(m) > 0);
    log.write("while the socket is down\n");
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // two ticks with the socket down
    expect(sent).toEqual([]);
    up = true;
    await vi.waitFor(() => expect(sent.length).toBe(1), { timeout: 5_000 });
    log.write("after it came back\n");
    const text = log.close();
    expect(sent.map((m) => m.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.map((m) => m.chunk).join("")).toBe(text);
    expect(text).toBe("while the socket is down\nafter it came back\n");
  });

  it("stops at the cap with one last line saying so", () => {
    const log = new DeployLog("dep_y", new Redactor(undefined), undefined, 1000);
    for (let i = 0; i < 100; i++) log.write(`${"z".repeat(99)}\n`);
    const text = log.close();
    expect(Buffer.byteLength(text)).toBeLessThan(1100);
    expect(text.trim().split("\n").at(-1)).toMatch(/truncated at 1000 bytes/);
  });

  it("reads listening ports from /proc/net/tcp", () => {
    const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0FA0 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1
   1: 0100007F:0BB8 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 2 1
   2: 0B00007F:A2D9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1`;
    expect(listeningPorts(tcp)).toEqual([4000]);
  });
});

describe("git deployments", () => {
  let agent: Agent;
  let handlers: HandlerTable;
  let server: GitServer;
  const messages: DeployLogMessage[] = [];
  const pod = "gitapp";
  const host = `${pod}.pods.test`;
  let container: string;
  const source = () => ({ url: server.url("app"), branch: "main", token: TOKEN });
  const deploy = (
    deploymentId: string,
    over: { branch?: string; token?: string; buildCommand?: string } = {},
  ) =>
    handlers["pod.deploy"](
      {
        name: pod,
        deploymentId,
        source: { ...source(), ...(over.branch ? { branch: over.branch } : {}), token: over.token ?? TOKEN },
        preset: "nodejs",
        buildCommand: over.buildCommand ?? null,
      },
      agent.ctx,
    );
  const logOf = (id: string) =>
    messages
      .filter((m) => m.deploymentId === id)
      .sort((a, b) => a.seq - b.seq)
      .map((m) => m.chunk)
      .join("");
  const inPod = (script: string) => execInContainer(agent.docker, container, ["/bin/sh", "-c", script]);
  const failed = (o: DeployOutcome) => (o.ok ? "ok" : `${o.class}: ${o.message}`);

  beforeAll(async () => {
    agent = await startAgent({
      // more than the pod's 256 MB: the build gets the pod's memory, never the agent's default
      PODHOST_BUILD_MEMORY_MB: "1024",
      PODHOST_START_TIMEOUT_S: "8",
      PODHOST_BUILD_TIMEOUT_S: "120",
    });
    handlers = createHandlers({ ...agent, deployLog: (m) => messages.push(m) > 0 });
    server = await startGitServer({ token: TOKEN });
    await server.createRepo("app", nodeApp("v1"));
    await server.commit("app", { "README.md": "dev branch" }, { branch: "dev" });
    await server.commit("app", {}, { branch: "main", message: "back on main" });
    await handlers["pod.create"](podSpec(pod, { preset: "nodejs", port: 3000 }), agent.ctx);
    container = podNames(agent.config.namePrefix, pod).container;
  });

  afterAll(async () => {
    // the last deploy's candidate and build container go a moment after it answered
    await until(
      async () =>
        !(await agent.docker.listContainers({ all: true, filters: { label: [LABEL_GIT_POD] } })).some(
          (c) => c.Labels[LABEL_PREFIX] === agent.config.namePrefix,
        ),
      20_000,
    ).catch(() => undefined);
    await server?.close();
    await agent?.cleanup();
  });

  it("repo.branches lists the heads and HEAD's target; a wrong token is an auth failure", async () => {
    const r = await handlers["repo.branches"](
      { source: { url: server.url("app"), token: TOKEN } },
      agent.ctx,
    );
    expect(r).toEqual({ branches: ["dev", "main"], default_branch: "main" });
    const bad = await handlers["repo.branches"](
      { source: { url: server.url("app"), token: "nope" } },
      agent.ctx,
    ).catch((e: Error & { code?: string }) => e);
    expect(bad).toMatchObject({ code: "forbidden", message: expect.stringMatching(/^auth: /) });
    const plain = await handlers["repo.branches"](
      { source: { url: "http://example.com/a.git" } },
      agent.ctx,
    ).catch((e: Error & { code?: string }) => e);
    expect(plain).toMatchObject({
      code: "bad_request",
      message: expect.stringMatching(/must be an https:\/\/ Git URL/),
    });
  });

  it("attacker: git is fenced like an import fetch (no loopback over https, no redirects, fixed messages)", async () => {
    const refusal = (e: Error & { code?: string }) => ({ code: e.code, message: e.message });
    const branches = (url: string) =>
      handlers["repo.branches"]({ source: { url, token: TOKEN } }, agent.ctx).then(
        () => ({ code: "ok", message: "" }),
        refusal,
      );
    // https:// to this machine: a listening port and a closed one read the same, and nothing is fetched
    const listening = await branches(`https://127.0.0.1:${new URL(server.base).port}/app.git`);
    const closed = await branches("https://127.0.0.1:1/app.git");
    expect(listening).toEqual(closed);
    expect(listening).toMatchObject({ code: "bad_request", message: expect.stringContaining("public host") });
    for (const inward of [
      "https://169.254.169.254/x.git",
      "https://10.0.0.1/x.git",
      "https://[::ffff:127.0.0.1]/x.git",
      "https://metadata.google.internal/x.git",
    ])
      expect(await branches(inward), inward).toMatchObject({ code: "bad_request" });

    // An allowed server (plain http on loopback, as the tests allow) that redirects to a loopback
    // repository: git would follow it (and send the token along); the fetch is refused instead.
    const seen: string[] = [];
    const redirector = createServer((req, res) => {
      seen.push(req.url ?? "");
      res.writeHead(302, {
        location: `${server.base}/app.git${(req.url ?? "").replace(/^\/moved\.git/, "")}`,
      });
      res.end();
    });
    await new Promise<void>((r) => redirector.listen(0, "127.0.0.1", r));
    try {
      const port = (redirector.address() as AddressInfo).port;
      const moved = await branches(`http://127.0.0.1:${port}/moved.git`);
      expect(moved).toMatchObject({ code: "unprocessable", message: expect.stringContaining("redirect") });
      expect(seen.length).toBeGreaterThan(0);
      const inspected = await handlers["repo.inspect"](
        { source: { url: `http://127.0.0.1:${port}/moved.git`, branch: "main" } },
        agent.ctx,
      ).then(() => "fetched", refusal);
      expect(inspected).toMatchObject({
        code: "unprocessable",
        message: expect.stringContaining("redirect"),
      });
    } finally {
      await new Promise<void>((r) => redirector.close(() => r()));
    }

    // A closed port on an allowed address: a fixed sentence, not git's own words.
    const down = await branches("http://127.0.0.1:1/app.git");
    expect(down).toEqual({
      code: "unprocessable",
      message: "repo_unreachable: the repository could not be reached, or it is not a Git repository",
    });
  });

  it("attacker: a public-looking name that resolves inward is refused; a public one is pinned", async () => {
    const answer =
      (address: string, family = 4) =>
      async () => [{ address, family }];
    for (const [address, family] of [
      ["127.0.0.1", 4],
      ["10.1.2.3", 4],
      ["169.254.169.254", 4],
      ["::1", 6],
      ["fd00::1", 6],
    ] as const)
      await expect(
        repoTarget("https://git.example.com/a.git", false, answer(address, family)),
      ).rejects.toMatchObject({
        cls: "repo_unreachable",
        code: "bad_request",
      });
    // one inward address among public ones refuses the name (curl may pick any)
    const mixed = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "127.0.0.1", family: 4 },
    ];
    await expect(repoTarget("https://git.example.com/a.git", false, mixed)).rejects.toMatchObject({
      code: "bad_request",
    });
    const pinned = await repoTarget("https://git.example.com:8443/a.git", false, async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1::1", family: 6 },
    ]);
    expect(pinned).toEqual({
      url: "https://git.example.com:8443/a.git",
      loopbackHttp: false,
      pin: "git.example.com:8443:93.184.216.34,[2606:2800:220:1::1]",
    });
    // http:// to loopback only when allowed
    await expect(repoTarget("http://127.0.0.1:9/a.git", false)).rejects.toMatchObject({
      code: "bad_request",
    });
    expect((await repoTarget("http://localhost:9/a.git", true)).pin).toBe("localhost:9:127.0.0.1");
  });

  it("repo.inspect detects the commands of a branch and leaves nothing behind", async () => {
    const d = await handlers["repo.inspect"]({ source: source() }, agent.ctx);
    expect(d).toEqual({
      preset: "nodejs",
      install_command: "npm install",
      build_command: null,
      start_command: "npm start",
      port: 3000,
    });
    const missing = await handlers["repo.inspect"](
      { source: { ...source(), branch: "nope" } },
      agent.ctx,
    ).catch((e: Error & { code?: string }) => e);
    expect(missing).toMatchObject({
      code: "not_found",
      message: expect.stringMatching(/^branch_not_found: /),
    });
  });

  it("deploys: the commit serves through the ingress; ~/app is a release, the first ~/app is kept", async () => {
    const t0 = performance.now();
    const o = await deploy("dep_1");
    const took = performance.now() - t0;
    console.log(`first deploy (npm install of a local dependency): ${ms(t0)} ms`);
    expect(failed(o)).toBe("ok");
    if (!o.ok) return;
    expect(o.release).toBe("dep_1");
    // the host's own measure of the deploy, what the Worker counts against the build budget
    expect(o.build_ms).toBeGreaterThan(0);
    expect(o.build_ms).toBeLessThanOrEqual(Math.ceil(took) + 5);
    expect(o.kept).toEqual(["dep_1"]);
    expect(o.commit.message).toBe("back on main");
    expect((await httpGet(agent.port, host)).body).toBe("v1 hello from greet -");
    const r = await inPod(
      "readlink ~/app; test -d ~/releases/initial && echo initial; stat -c %u ~/releases/dep_1/server.js ~/releases/dep_1/node_modules",
    );
    expect(r.stdout.split("\n")).toEqual(["releases/dep_1", "initial", "1000", "1000", ""]);
    const log = logOf("dep_1");
    expect(log).toContain("$ npm install");
    expect(messages.filter((m) => m.deploymentId === "dep_1").map((m) => m.seq)).toEqual(
      messages.filter((m) => m.deploymentId === "dep_1").map((_, i) => i),
    );
    expect((await inPod("cat ~/logs/build.log")).stdout).toContain("$ npm install");
  });

  it("a code-only deploy reuses the dependencies, keeps .env, and no request fails", async () => {
    await handlers["pod.env.set"]({ name: pod, vars: { GREETING: "hi-env" }, restartApp: true }, agent.ctx);
    // the env write restarts the app (not the deploy's doing): poll only once it answers again
    await until(async () => (await httpGet(agent.port, host)).body.endsWith("hi-env"));
    await server.commit("app", nodeApp("v2"), { message: "v2" });
    const p = poll(agent.port, host);
    const t0 = performance.now();
    const o = await deploy("dep_2");
    const took = ms(t0);
    const stats = await p.end();
    console.log(
      `warm code-only deploy: ${took} ms (${stats.count} requests during it, ${stats.failures.length} failed)`,
    );
    expect(failed(o)).toBe("ok");
    expect(stats.failures).toEqual([]);
    expect(logOf("dep_2")).toContain("dependencies unchanged: reusing node_modules of release dep_1");
    expect(logOf("dep_2")).not.toContain("$ npm install");
    // the new release answered on the standby port (no candidate container, no ingress reload)
    expect(logOf("dep_2")).toContain(`(standby port ${STANDBY_PORT})`);
    expect(logOf("dep_2")).not.toContain("container of its own");
    expect((await httpGet(agent.port, host)).body).toBe("v2 hello from greet hi-env");
    const env = await handlers["pod.env.get"]({ name: pod }, agent.ctx);
    expect(env.vars).toMatchObject({ GREETING: "hi-env" });
    console.log(logOf("dep_2"));
    expect(took).toBeLessThan(6000);
  });

  it("the same deployment id again joins or answers from the record: it never builds twice", async () => {
    const before = messages.length;
    const again = await deploy("dep_2");
    expect(failed(again)).toBe("ok");
    expect(messages.length).toBe(before);
    await server.commit("app", nodeApp("v3"), { message: "v3" });
    const [a, b] = await Promise.all([deploy("dep_3"), deploy("dep_3")]);
    expect(a).toEqual(b);
    expect(logOf("dep_3").split("fetching branch").length - 1).toBe(1);
    expect((await httpGet(agent.port, host)).body).toBe("v3 hello from greet hi-env");
  });

  it("a broken build fails as build_script while the old release keeps answering", async () => {
    const broken = nodeApp("v4", {
      "package.json": JSON.stringify({
        name: "app",
        scripts: { start: "node server.js", build: "node -e \"console.log('building'); process.exit(3)\"" },
        dependencies: { greet: "file:./vendor/greet" },
      }),
    });
    await server.commit("app", broken, { message: "broken build" });
    const p = poll(agent.port, host);
    const o = await deploy("dep_4");
    const stats = await p.end();
    expect(failed(o)).toMatch(/^build_script: /);
    expect(o.ok ? null : o.commit?.message).toBe("broken build");
    expect(stats.failures).toEqual([]);
    expect(stats.bodies).toEqual(["v3 hello from greet hi-env"]);
    expect(logOf("dep_4")).toContain("building");
    expect((await inPod("ls ~/releases")).stdout.split("\n")).not.toContain("dep_4");
    // the same id again answers from the record
    expect(failed(await deploy("dep_4"))).toMatch(/^build_script: /);
  });

  it("a failing install is dependency_install", async () => {
    await server.commit(
      "app",
      nodeApp("v5", {
        "package.json": JSON.stringify({ name: "app", dependencies: { gone: "file:./missing.tgz" } }),
      }),
      { message: "missing dep" },
    );
    expect(failed(await deploy("dep_5"))).toMatch(/^dependency_install: /);
    expect((await httpGet(agent.port, host)).body).toBe("v3 hello from greet hi-env");
  });

  it("an app that exits is missing_start; one on another port is port_mismatch", async () => {
    await server.commit("app", nodeApp("v6", { "server.js": 'console.log("bye"); process.exit(1);\n' }));
    expect(failed(await deploy("dep_6"))).toMatch(/^missing_start: .*exited/);
    await server.commit(
      "app",
      nodeApp("v7", { "server.js": 'require("http").createServer((q, s) => s.end("x")).listen(4000);\n' }),
    );
    expect(failed(await deploy("dep_7"))).toMatch(
      /^port_mismatch: the app listens on port 4000, not on 3000/,
    );
    expect((await httpGet(agent.port, host)).body).toBe("v3 hello from greet hi-env");
    const leftovers = await agent.docker.listContainers({ all: true, filters: { label: [LABEL_GIT_POD] } });
    expect(leftovers.filter((c) => c.Labels[LABEL_PREFIX] === agent.config.namePrefix)).toEqual([]);
  });

  it("fetch failures: auth (wrong token), branch_not_found, repo_unreachable", async () => {
    expect(failed(await deploy("dep_8", { token: "wrong-token" }))).toMatch(/^auth: /);
    expect(failed(await deploy("dep_9", { branch: "no-such-branch" }))).toMatch(/^branch_not_found: /);
    const o = await handlers["pod.deploy"](
      {
        name: pod,
        deploymentId: "dep_10",
        source: { url: "http://127.0.0.1:1/nothing.git", branch: "main" },
        preset: "nodejs",
        buildCommand: null,
      },
      agent.ctx,
    );
    expect(failed(o)).toMatch(/^repo_unreachable: /);
    const withCreds = await handlers["pod.deploy"](
      {
        name: pod,
        deploymentId: "dep_creds",
        source: { url: `http://user:${TOKEN}@127.0.0.1:1/x.git`, branch: "main" },
        preset: "nodejs",
        buildCommand: null,
      },
      agent.ctx,
    );
    expect(failed(withCreds)).toBe(
      "repo_unreachable: the repository URL: must not contain credentials; give the access token as auth_token instead",
    );
  });

  it("a build that eats memory is stopped by the pod's own memory limit; the serving app stays responsive", async () => {
    await server.commit("app", nodeApp("v11"), { message: "hungry build" });
    const p = poll(agent.port, host);
    const t0 = performance.now();
    const o = await deploy("dep_11", {
      buildCommand: 'node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))"',
    });
    const stats = await p.end();
    console.log(`memory-eating build stopped after ${ms(t0)} ms; ${stats.count} requests meanwhile`);
    expect(failed(o)).toMatch(/^build_script: .*exit status 137/);
    expect(stats.failures).toEqual([]);
    expect(stats.bodies).toEqual(["v3 hello from greet hi-env"]);
  });

  it("a build that burns every core yields to the serving app (a quarter of a pod's CPU weight)", async () => {
    const quiet = poll(agent.port, host);
    await new Promise((r) => setTimeout(r, 1000));
    const before = await quiet.end();
    await server.commit("app", nodeApp("v12"), { message: "busy build" });
    const p = poll(agent.port, host);
    // two busy loops (the build's cap is 2 CPUs, all this host has) for 3 s, then a failure
    const running = deploy("dep_12", {
      buildCommand: 'for i in 1 2; do timeout 3 sh -c "while :; do :; done" & done; wait; exit 1',
    });
    const box = await until(async () => {
      const [c] = await agent.docker.listContainers({ filters: { label: [`${LABEL_GIT_POD}=${pod}`] } });
      return c ? (await agent.docker.getContainer(c.Id).inspect()).HostConfig : null;
    });
    const o = await running;
    const stats = await p.end();
    // the pod's memory (its plan's: 256 MB here), not the agent's 1 GiB default; CPU as before
    const podMemory = (await agent.docker.getContainer(container).inspect()).HostConfig.Memory;
    expect(podMemory).toBe(256 * 1024 * 1024);
    expect(box).toMatchObject({ CpuShares: 256, NanoCpus: 2e9, Memory: podMemory, MemorySwap: podMemory });
    console.log(
      `busy build: p50 ${before.p50.toFixed(1)} ms before, ${stats.p50.toFixed(1)} ms during (${stats.count} requests)`,
    );
    expect(failed(o)).toMatch(/^build_script: /);
    expect(stats.failures).toEqual([]);
    expect(stats.bodies).toEqual(["v3 hello from greet hi-env"]);
    expect(stats.p50).toBeLessThan(Math.max(50, before.p50 * 5));
  });

  it("what is left of the pod's build budget is the build's time limit (timeoutMs from the Worker)", async () => {
    await server.commit("app", nodeApp("v13"), { message: "slow build" });
    const t0 = performance.now();
    const o = await handlers["pod.deploy"](
      {
        name: pod,
        deploymentId: "dep_13",
        source: source(),
        preset: "nodejs",
        buildCommand: "sleep 60",
        timeoutMs: 4_000,
      },
      agent.ctx,
    );
    const took = performance.now() - t0;
    expect(failed(o)).toMatch(/^timeout: /);
    expect(took).toBeLessThan(30_000);
    expect(o.build_ms).toBeGreaterThanOrEqual(4_000);
    expect(o.build_ms).toBeLessThan(30_000);
    expect((await httpGet(agent.port, host)).body).toBe("v3 hello from greet hi-env");
  });

  it("rolls back to a kept release (env kept); an unknown release is not_found", async () => {
    const o = await handlers["pod.rollback"](
      { name: pod, deploymentId: "rb_1", release: "dep_1" },
      agent.ctx,
    );
    expect(failed(o)).toBe("ok");
    expect(o.ok && o.release).toBe("dep_1");
    expect((await httpGet(agent.port, host)).body).toBe("v1 hello from greet hi-env");
    expect((await handlers["pod.env.get"]({ name: pod }, agent.ctx)).vars).toMatchObject({
      GREETING: "hi-env",
    });
    const missing = await handlers["pod.rollback"](
      { name: pod, deploymentId: "rb_2", release: "dep_4" },
      agent.ctx,
    ).catch((e: Error & { code?: string }) => e);
    expect(missing).toMatchObject({ code: "not_found" });
  });

  it("keeps the newest five releases", async () => {
    for (const v of ["a", "b", "c", "d"]) {
      await server.commit("app", nodeApp(`v-${v}`), { message: v });
      expect(failed(await deploy(`dep_k${v}`))).toBe("ok");
    }
    const o = await deploy("dep_k5");
    expect(o.ok && o.kept).toEqual(["dep_k5", "dep_kd", "dep_kc", "dep_kb", "dep_ka"]);
    // older releases are deleted right after the deploy answers
    const want = ["dep_k5", "dep_ka", "dep_kb", "dep_kc", "dep_kd", "initial"];
    const dirs = async () => (await inPod("ls ~/releases")).stdout.split("\n").filter(Boolean).sort();
    await until(async () => JSON.stringify(await dirs()) === JSON.stringify(want));
    expect(await dirs()).toEqual(want);
  });

  it("runs package.json's start script as npm would, without npm; with a prestart hook, through npm itself", async () => {
    const report = `require("http").createServer((q, s) => s.end([
  process.env.npm_package_name, process.env.npm_package_version, process.env.npm_lifecycle_event,
  (process.env.PATH || "").split(":")[0].endsWith("/node_modules/.bin"), require("fs").existsSync("hooked"),
].join(" "))).listen(Number(process.env.PORT), "0.0.0.0");\n`;
    const pkg = (scripts: Record<string, string>) =>
      JSON.stringify({
        name: "npm-app",
        version: "2.3.4",
        scripts,
        dependencies: { greet: "file:./vendor/greet" },
      });
    await server.commit(
      "app",
      nodeApp("-", { "server.js": report, "package.json": pkg({ start: "node server.js" }) }),
    );
    const p = poll(agent.port, host);
    expect(failed(await deploy("dep_npm"))).toBe("ok");
    const stats = await p.end();
    expect(stats.failures).toEqual([]);
    // the candidate on the standby (start fields from the agent) and the pod's own app (run-app) alike
    expect(stats.bodies.filter((b) => b.startsWith("npm-app"))).toEqual(["npm-app 2.3.4 start true false"]);
    expect((await httpGet(agent.port, host)).body).toBe("npm-app 2.3.4 start true false");
    expect((await inPod("ps -eo args")).stdout).not.toMatch(/\bnpm\b/);
    const hooked = pkg({ prestart: "touch hooked", start: "node server.js" });
    await server.commit("app", nodeApp("-", { "server.js": report, "package.json": hooked }));
    expect(failed(await deploy("dep_npm_hook"))).toBe("ok");
    expect((await httpGet(agent.port, host)).body).toBe("npm-app 2.3.4 start true true");
  });

  it("an app that ignores PORT starts in a candidate container of its own, as does one whose standby port is taken", async () => {
    // bound to the pod's port whatever PORT says: beside the serving app it cannot listen there
    const fixed =
      'require("http").createServer((q, s) => s.end("fixed " + require("greet")())).listen(3000);\n';
    await server.commit("app", nodeApp("v-fixed", { "server.js": fixed }), { message: "fixed port" });
    const p = poll(agent.port, host);
    const o = await deploy("dep_fixed");
    const stats = await p.end();
    expect(failed(o)).toBe("ok");
    expect(stats.failures).toEqual([]);
    expect(logOf("dep_fixed")).toContain(
      "it exited on the standby port: starting it in a container of its own",
    );
    expect((await httpGet(agent.port, host)).body).toBe("fixed hello from greet");
    // a process of the pod's own on the standby port: the deploy leaves it alone
    const squatter = `require("http").createServer((q, s) => s.end("squatter")).listen(${STANDBY_PORT})`;
    await inPod(`setsid /usr/local/bin/node -e '${squatter}' >/dev/null 2>&1 </dev/null &`);
    const listening = async () =>
      (
        await inPod(`cat /proc/net/tcp /proc/net/tcp6 | grep -ci ':${STANDBY_PORT.toString(16)} '`)
      ).stdout.trim() !== "0";
    expect(await until(listening)).toBe(true);
    await server.commit("app", nodeApp("v-sq"), { message: "squatter" });
    const q = poll(agent.port, host);
    const o2 = await deploy("dep_sq");
    const stats2 = await q.end();
    expect(failed(o2)).toBe("ok");
    expect(stats2.failures).toEqual([]);
    expect(stats2.bodies).not.toContain("squatter");
    expect(logOf("dep_sq")).toContain(
      `port ${STANDBY_PORT} is taken in the pod: starting the new release in a container of its own`,
    );
    expect((await httpGet(agent.port, host)).body).toBe("v-sq hello from greet hi-env");
    await inPod("pkill -f squatter");
  });

  it("the token is nowhere: not in build.log, the deploy-log messages, the pod's files or the host's repo", async () => {
    expect(server.authHeaders.some((h) => Buffer.from(h.slice(6), "base64").toString().includes(TOKEN))).toBe(
      true,
    );
    expect(messages.some((m) => m.chunk.includes(TOKEN))).toBe(false);
    const grep = await inPod(`grep -rFl -- '${TOKEN}' /home/pod_user; echo "exit $?"`);
    expect(grep.stdout.trim()).toBe("exit 1");
    const config = await readFile(join(agent.config.cacheDir, "git", pod, "repo.git", "config"), "utf8");
    expect(config).not.toContain(TOKEN);
  });

  it("limits: a large fetch, a tree that inflates and a build that never ends; hostile file names are only data", async () => {
    const serving = (await httpGet(agent.port, host)).body;
    const git = agent.config.git;
    const strict = createHandlers({
      ...agent,
      config: {
        ...agent.config,
        git: {
          ...git,
          maxFetchBytes: 1024 * 1024,
          maxTreeBytes: 8 * 1024 * 1024,
          build: { ...git.build, timeoutMs: 4000 },
        },
      },
    });
    const run = (id: string, buildCommand: string | null = null) =>
      strict["pod.deploy"](
        { name: pod, deploymentId: id, source: source(), preset: "nodejs", buildCommand },
        agent.ctx,
      );
    const random = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < random.length; i += 4) random.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
    await server.commit("app", nodeApp("big", { "blob.bin": random }), { message: "big" });
    expect(failed(await run("dep_big"))).toMatch(/^repo_too_large: the fetch exceeded 1 MiB/);
    // 32 MiB of zeros: a tiny pack, a huge tree
    await server.commit("app", nodeApp("zeros", { "blob.bin": Buffer.alloc(32 * 1024 * 1024) }));
    expect(failed(await run("dep_zeros"))).toMatch(/^repo_too_large: the commit's files exceed 8 MiB/);
    const hostile = nodeApp("hostile", {
      "blob.bin": null,
      "$(touch /tmp/pwned-git-test);x": "a",
      "`id`;--x.js": "b",
      "link-out": { link: "/etc/passwd" },
    });
    await server.commit("app", hostile);
    const slow = await run("dep_slow", "sleep 60");
    expect(failed(slow)).toMatch(/^timeout: /);
    // a fork bomb meets the build's pids limit and then its clock; the pod serves on meanwhile
    const p = poll(agent.port, host);
    const bomb = await run("dep_fork", "f() { f | f & }; f; sleep 60");
    const stats = await p.end();
    expect(failed(bomb)).toMatch(/^timeout: /);
    expect(stats.failures).toEqual([]);
    expect(stats.bodies).toEqual([serving]);
    const files = await inPod("ls ~/releases/; ls /tmp");
    expect(files.stdout).not.toContain("dep_slow");
    expect(files.stdout).not.toContain("pwned");
    expect(existsSync("/tmp/pwned-git-test")).toBe(false);
    expect((await httpGet(agent.port, host)).body).toBe(serving);
  });

  it("static, php and python pods deploy too (static and php by one atomic rename)", async () => {
    const pyApp = (v: string) => `import os
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"${v} " + os.environ.get("PORT", "").encode())
    def log_message(self, *a): pass
HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()
`;
    const cases = [
      { preset: "static", port: 8080, files: (v: string) => ({ "index.html": `${v}` }) },
      { preset: "php", port: 8080, files: (v: string) => ({ "index.php": `<?php echo "${v}";` }) },
      { preset: "python", port: 8000, files: (v: string) => ({ "app.py": pyApp(v) }) },
    ] as const;
    for (const c of cases) {
      const name = `git-${c.preset}`;
      const vhost = `${name}.pods.test`;
      await handlers["pod.create"](podSpec(name, { preset: c.preset, port: c.port }), agent.ctx);
      await server.createRepo(name, c.files(`${c.preset} v1`));
      const run = (id: string) =>
        handlers["pod.deploy"](
          {
            name,
            deploymentId: id,
            source: { url: server.url(name), branch: "main", token: TOKEN },
            preset: c.preset,
            buildCommand: null,
          },
          agent.ctx,
        );
      expect(failed(await run(`${c.preset}_1`))).toBe("ok");
      const want1 = c.preset === "python" ? "python v1 8000" : `${c.preset} v1`;
      expect((await httpGet(agent.port, vhost)).body).toBe(want1);
      await server.commit(name, c.files(`${c.preset} v2`));
      const p = poll(agent.port, vhost);
      const t0 = performance.now();
      const o = await run(`${c.preset}_2`);
      const stats = await p.end();
      console.log(
        `${c.preset} second deploy: ${ms(t0)} ms, ${stats.count} requests, ${stats.failures.length} failed`,
      );
      expect(failed(o)).toBe("ok");
      expect(stats.failures).toEqual([]);
      const want2 = c.preset === "python" ? "python v2 8000" : `${c.preset} v2`;
      expect((await httpGet(agent.port, vhost)).body).toBe(want2);
      // the pod's deletion takes what the host kept for its deployments with it
      expect(existsSync(join(agent.stateDir, "git", name, "releases.json"))).toBe(true);
      await handlers["pod.delete"]({ name }, agent.ctx);
      expect(existsSync(join(agent.stateDir, "git", name))).toBe(false);
    }
  });

  it("a python pod reuses its venv when requirements.txt is unchanged (its scripts point at the new release)", async () => {
    const name = "git-venv";
    const vhost = `${name}.pods.test`;
    const app = (v: string) => `import os
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"${v} " + os.environ.get("VIRTUAL_ENV", "").encode())
    def log_message(self, *a): pass
HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()
`;
    await handlers["pod.create"](podSpec(name, { preset: "python", port: 8000 }), agent.ctx);
    await server.createRepo(name, { "app.py": app("py1"), "requirements.txt": "# nothing to install\n" });
    const run = (id: string) =>
      handlers["pod.deploy"](
        {
          name,
          deploymentId: id,
          source: { url: server.url(name), branch: "main", token: TOKEN },
          preset: "python",
          buildCommand: null,
        },
        agent.ctx,
      );
    expect(failed(await run("venv_1"))).toBe("ok");
    expect((await httpGet(agent.port, vhost)).body).toBe("py1 /home/pod_user/app/.venv");
    await server.commit(name, { "app.py": app("py2") });
    expect(failed(await run("venv_2"))).toBe("ok");
    expect(logOf("venv_2")).toContain("dependencies unchanged: reusing .venv of release venv_1");
    expect((await httpGet(agent.port, vhost)).body).toBe("py2 /home/pod_user/app/.venv");
    const heads = await execInContainer(agent.docker, podNames(agent.config.namePrefix, name).container, [
      "/usr/bin/head",
      "-qn1",
      "/home/pod_user/releases/venv_1/.venv/bin/pip",
      "/home/pod_user/releases/venv_2/.venv/bin/pip",
    ]);
    expect(heads.stdout.split("\n")).toEqual([
      "#!/home/pod_user/releases/venv_1/.venv/bin/python3",
      "#!/home/pod_user/releases/venv_2/.venv/bin/python3",
      "",
    ]);
  });

  it("a static pod with a build serves its output directory (dist/), and rolls back to the plain tree", async () => {
    const name = "git-vite";
    const vhost = `${name}.pods.test`;
    await handlers["pod.create"](podSpec(name, { preset: "static", port: 8080 }), agent.ctx);
    await server.createRepo(name, { "index.html": "source template" });
    const run = (id: string) =>
      handlers["pod.deploy"](
        {
          name,
          deploymentId: id,
          source: { url: server.url(name), branch: "main", token: TOKEN },
          preset: "static",
          buildCommand: null,
        },
        agent.ctx,
      );
    expect(failed(await run("vite_1"))).toBe("ok");
    expect((await httpGet(agent.port, vhost)).body).toBe("source template");
    await server.commit(name, {
      "package.json": JSON.stringify({
        name: "site",
        scripts: {
          build:
            "node -e \"require('fs').mkdirSync('dist'); require('fs').writeFileSync('dist/index.html', 'built page')\"",
        },
      }),
    });
    const o = await run("vite_2");
    expect(failed(o)).toBe("ok");
    expect(o.ok && o.detected).toMatchObject({
      install_command: "npm install",
      build_command: "npm run build",
    });
    expect((await httpGet(agent.port, vhost)).body).toBe("built page");
    const link = await execInContainer(agent.docker, podNames(agent.config.namePrefix, name).container, [
      "/bin/readlink",
      "/home/pod_user/app",
    ]);
    expect(link.stdout.trim()).toBe("releases/vite_2/dist");
    const back = await handlers["pod.rollback"](
      { name, deploymentId: "vite_rb", release: "vite_1" },
      agent.ctx,
    );
    expect(failed(back)).toBe("ok");
    expect((await httpGet(agent.port, vhost)).body).toBe("source template");
  });

  it("a restarted agent removes a deploy's leftover containers", async () => {
    const prefix = agent.config.namePrefix;
    // the last deploy's candidate goes a moment after it (by id): wait for its name to be free
    await until(
      async () =>
        !(await agent.docker.listContainers({ all: true, filters: { label: [LABEL_GIT_POD] } })).some(
          (c) => c.Labels[LABEL_PREFIX] === prefix,
        ),
    );
    await agent.docker.createContainer({
      name: candidateName(prefix, pod),
      Image: agent.config.images.nodejs,
      Cmd: ["true"],
      Labels: { [LABEL_PREFIX]: prefix, "podhost.helper": HELPER_CANDIDATE, [LABEL_GIT_POD]: pod },
    });
    await removeGitLeftovers(agent);
    const left = await agent.docker.listContainers({ all: true, filters: { label: [LABEL_GIT_POD] } });
    expect(left.filter((c) => c.Labels[LABEL_PREFIX] === prefix)).toEqual([]);
    expect((await httpGet(agent.port, host)).status).toBe(200);
  });
});
