/**
 * Git deploy bench (issue #12): push → new commit serving, for a small Node app with one dependency,
 * beside the same steps done by hand on the same machine in the same run.
 *
 *   tsx bench/deploy.ts [--reps 3] [--poll-ms 20]
 *
 * What runs: the agent's host half without the Worker — `pod.deploy` called directly on the agent's
 * handler table (as test/agent/git.test.ts does), against a smart-HTTP git server on 127.0.0.1
 * (test/support/git-server.ts: the real `git http-backend`), the real git client, the real Docker
 * engine and the agent's nginx ingress. The Worker's share of a deploy (webhook → queue → workflow →
 * HostAgent DO → agent) is not in these figures.
 *
 * The app: `server.js` answering its version, `package.json` with one dependency, `ms@2.1.3` (a tiny
 * real npm package with no dependencies of its own), and a `package-lock.json`, so both sides run
 * `npm ci`. The package is fetched once from the npm registry on the host (`npm pack`) and committed
 * as `vendor/ms-2.1.3.tgz` (`"ms": "file:vendor/ms-2.1.3.tgz"`): the pods' build containers cannot
 * reach the registry from this machine (TLS to it is intercepted by a CA only the host trusts), so
 * the install must work offline on both sides.
 *
 * Each repetition, with the two variants taking turns (rotating order):
 * 1. first deploy — a fresh pod (created before the clock starts, answering its placeholder page),
 *    a new commit pushed; ours: `pod.deploy` until the pod's address (the ingress, Host header)
 *    first answers the new commit. Floor: `git clone --depth 1` of the same repository from the
 *    same server, `npm ci` (host npm, its own cache directory warmed before the first repetition),
 *    `node server.js` on a free port, polled until it answers. Target: ours ≤ 1.3× the floor.
 * 2. second deploy, code only (dependency files unchanged: the agent reuses the serving release's
 *    node_modules) — a commit changing server.js pushed; ours: `pod.deploy` until the new commit
 *    answers. Floor: `git fetch --depth 1` + `git checkout` in the floor's clone, the app stopped
 *    and started again, polled until it answers. Target: ours ≤ 1.3× the floor (issue #30 item 2: a
 *    ratio to the same run's floor, as the first deploy's; it was ≤ 2 s).
 * During both deploys the pod's address is requested every `--poll-ms` and every failed request
 * (not 200, or no answer) is counted. Target: the switch adds no failed request.
 *
 * Clocks start after the push (the push is the same for both). Everything made here (the agent's
 * containers, volumes, networks and ingress, the git server, the floor's processes and directories)
 * is removed at the end, also on failure or Ctrl-C.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import type { DeployLogMessage } from "../agent/git/log";
import { createHandlers } from "../agent/handlers/pods";
import type { HandlerTable } from "../agent/handlers/types";
import type { DeployOutcome } from "../shared/protocol/git";
import { type Agent, freePort, podSpec, startAgent } from "../test/agent/helpers";
import { type Files, type GitServer, git, startGitServer } from "../test/support/git-server";
import { fmt, formatTable, median } from "./stats";
import { positiveInt } from "./support/args";
import { machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = { firstRatio: 1.3, warmRatio: 1.3, failed: 0 };
const v = verdicts("deploy");
const DEP = { name: "ms", version: "2.1.3" };

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "3" },
    "poll-ms": { type: "string", default: "20" },
  },
});
const REPS = positiveInt("reps", args.reps);
const POLL_MS = positiveInt("poll-ms", args["poll-ms"]);

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

/** npm as the build container runs it (no audit, fund or update check), with the floor's own cache. */
const npmEnv = (cache: string) => ({
  ...process.env,
  NPM_CONFIG_AUDIT: "false",
  NPM_CONFIG_FUND: "false",
  NPM_CONFIG_UPDATE_NOTIFIER: "false",
  NPM_CONFIG_CACHE: cache,
});

// --------------------------------------------------------------------------------------------- probes

/** GET / on 127.0.0.1:port (with a Host header for the ingress); status 0 when nothing answers. */
function get(port: number, host?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/", headers: host ? { host } : {}, agent: false, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on("error", () => resolve({ status: 0, body: "" }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ status: 0, body: "" }));
    req.end();
  });
}

/** Polls until the address answers 200 with a body starting with `want`; the time it first did. */
async function untilServes(port: number, want: string, host?: string, timeoutMs = 120_000): Promise<number> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const r = await get(port, host);
    if (r.status === 200 && r.body.startsWith(want)) return now();
    if (now() > deadline) throw new Error(`timed out waiting for "${want}" on port ${port}`);
    await sleep(POLL_MS);
  }
}

/**
 * Requests the pod's address every POLL_MS until stopped: counts requests and failures, and notes
 * when a body starting with `want` was first seen.
 */
function watch(port: number, host: string, want: string) {
  let stop = false;
  let count = 0;
  let firstNew: number | null = null;
  const failures: string[] = [];
  // what the address answered, each time it changed (the first word of the body: the version)
  const changes: string[] = [];
  let last = "";
  const t0 = now();
  const done = (async () => {
    while (!stop) {
      const sent = now();
      const r = await get(port, host);
      count++;
      if (r.status !== 200) failures.push(`+${Math.round(now() - t0)} ms: ${r.status || "no answer"}`);
      else if (firstNew === null && r.body.startsWith(want)) firstNew = now();
      const seen = `${r.status} ${r.body.split(/\s/)[0]?.slice(0, 20) ?? ""}`;
      if (seen !== last) changes.push(`+${((sent - t0) / 1000).toFixed(2)}s ${seen}`);
      last = seen;
      await sleep(POLL_MS);
    }
  })();
  return {
    async end() {
      stop = true;
      await done;
      return { count, failures, firstNew, changes };
    },
  };
}

// ------------------------------------------------------------------------------------------------ app

const serverJs = (version: string) => `const http = require("http");
const ms = require("ms");
http.createServer((req, res) => res.end("${version} " + ms(90000)))
  .listen(Number(process.env.PORT), "0.0.0.0");
`;

/** package.json, the lockfile and the vendored tarball of the one dependency (fetched once). */
async function appBase(work: string): Promise<Files> {
  const dir = path.join(work, "lock");
  await mkdir(path.join(dir, "vendor"), { recursive: true });
  const env = npmEnv(path.join(work, "npm-cache"));
  await run("npm", ["pack", `${DEP.name}@${DEP.version}`, "--pack-destination", "vendor", "--silent"], {
    cwd: dir,
    env,
  });
  const tgz = `vendor/${DEP.name}-${DEP.version}.tgz`;
  const pkg = JSON.stringify(
    {
      name: "bench-app",
      version: "1.0.0",
      private: true,
      scripts: { start: "node server.js" },
      dependencies: { [DEP.name]: `file:${tgz}` },
    },
    null,
    2,
  );
  await writeFile(path.join(dir, "package.json"), pkg);
  await run("npm", ["install", "--package-lock-only", "--ignore-scripts", "--silent"], { cwd: dir, env });
  return {
    "package.json": pkg,
    "package-lock.json": await readFile(path.join(dir, "package-lock.json"), "utf8"),
    [tgz]: await readFile(path.join(dir, tgz)),
  };
}

// ------------------------------------------------------------------------------------- floor, by hand

class Floor {
  private app: ChildProcess | null = null;
  private port = 0;
  constructor(
    private readonly dir: string,
    private readonly cache: string,
    private readonly url: string,
  ) {}

  private async start(want: string): Promise<void> {
    this.port = await freePort();
    this.app = spawn(process.execPath, ["server.js"], {
      cwd: this.dir,
      env: { ...process.env, PORT: String(this.port) },
      stdio: "ignore",
    });
    await untilServes(this.port, want);
  }

  async stopApp(): Promise<void> {
    const app = this.app;
    this.app = null;
    if (!app || app.exitCode !== null || app.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      app.once("exit", () => resolve());
      app.kill("SIGTERM");
    });
  }

  /** git clone --depth 1, npm ci, node server.js, until it answers. */
  async first(want: string): Promise<void> {
    await this.stopApp();
    await rm(this.dir, { recursive: true, force: true });
    await git(["clone", "-q", "--depth", "1", "--branch", "main", this.url, this.dir]);
    await run("npm", ["ci", "--silent"], { cwd: this.dir, env: npmEnv(this.cache) });
    await this.start(want);
  }

  /** git fetch --depth 1 + checkout, the app restarted, until it answers. */
  async codeOnly(want: string): Promise<void> {
    await git(["fetch", "-q", "--depth", "1", "origin", "main"], this.dir);
    await git(["checkout", "-q", "--detach", "FETCH_HEAD"], this.dir);
    await this.stopApp();
    await this.start(want);
  }
}

// ------------------------------------------------------------------------------------------- ours

interface Ours {
  /** deploy call → the pod's address first answers the new commit */
  servingMs: number;
  /** deploy call → the handler answered (the switch done, the candidate on its way out) */
  answeredMs: number;
  requests: number;
  failures: string[];
  /** what the pod's address answered, each time it changed (request sent at +s) */
  changes: string[];
}

async function deployOurs(
  handlers: HandlerTable,
  agent: Agent,
  pod: string,
  deploymentId: string,
  url: string,
  want: string,
): Promise<Ours> {
  const host = `${pod}.pods.test`;
  const w = watch(agent.port, host, want);
  const t0 = now();
  let outcome: DeployOutcome | Error;
  try {
    outcome = await handlers["pod.deploy"](
      { name: pod, deploymentId, source: { url, branch: "main" }, preset: "nodejs", buildCommand: null },
      agent.ctx,
    );
  } catch (err) {
    outcome = err instanceof Error ? err : new Error(String(err));
  }
  const answered = now();
  const seen = await w.end();
  if (outcome instanceof Error) throw outcome;
  if (!outcome.ok) throw new Error(`deploy ${deploymentId} failed: ${outcome.class}: ${outcome.message}`);
  const served = seen.firstNew ?? (await untilServes(agent.port, want, host));
  return {
    servingMs: served - t0,
    answeredMs: answered - t0,
    requests: seen.count,
    failures: seen.failures,
    changes: seen.changes,
  };
}

/** The agent's own lines of a deploy log (`[podhost +1.2s] …`). */
const agentLines = (messages: DeployLogMessage[], id: string) =>
  messages
    .filter((m) => m.deploymentId === id)
    .sort((a, b) => a.seq - b.seq)
    .map((m) => m.chunk)
    .join("")
    .split("\n")
    .filter((l) => l.startsWith("[podhost"));

// ------------------------------------------------------------------------------------------------ main

async function main() {
  const work = await mkdtemp(path.join(tmpdir(), "podhost-bench-deploy-"));
  const cache = path.join(work, "npm-cache");
  let agent: Agent | null = null;
  let server: GitServer | null = null;
  let floor: Floor | null = null;
  const cleanup = async () => {
    await floor?.stopApp().catch(() => undefined);
    // a deploy's candidate and build container go a moment after it answered
    await sleep(1500);
    await agent?.cleanup().catch((e: unknown) => console.error(`agent clean-up: ${String(e)}`));
    await server?.close().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  };
  let interrupted = false;
  process.once("SIGINT", () => {
    interrupted = true;
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    console.log("bench/deploy: push → new commit serving (nodejs pod, one dependency)");
    console.log(
      "mode: the agent's pod.deploy handler driven directly (no Worker), git over smart HTTP on 127.0.0.1, real Docker",
    );
    console.log(`machine at start: ${machineLoad()}`);
    const base = await appBase(work);
    console.log(
      `dependency: ${DEP.name}@${DEP.version} from the npm registry, vendored as file:vendor/${DEP.name}-${DEP.version}.tgz (installs offline on both sides); both sides run npm ci`,
    );
    const hostNpm = (await run("npm", ["--version"], { env: npmEnv(cache) })).stdout.trim();

    server = await startGitServer();
    const url = server.url("app");
    await server.createRepo("app", { ...base, "server.js": serverJs("v0") });
    agent = await startAgent();
    const messages: DeployLogMessage[] = [];
    const handlers = createHandlers({ ...agent, deployLog: (m) => messages.push(m) > 0 });
    floor = new Floor(path.join(work, "floor"), cache, url);

    // warm the floor's npm cache (and git's and node's files in the page cache) once, untimed
    await floor.first("v0");
    await floor.stopApp();
    const imageNpm = (
      await run("docker", ["run", "--rm", "--entrypoint", "npm", agent.config.images.nodejs, "--version"])
    ).stdout.trim();
    console.log(
      `floor: on the host, node ${process.version}, npm ${hostNpm} with a warm cache of its own; pods: ${agent.config.images.nodejs} (npm ${imageNpm})`,
    );

    const samples = {
      firstOurs: [] as number[],
      firstOursAnswered: [] as number[],
      firstFloor: [] as number[],
      warmOurs: [] as number[],
      warmOursAnswered: [] as number[],
      warmFloor: [] as number[],
    };
    let firstFailed = 0;
    let firstRequests = 0;
    let warmFailed = 0;
    let warmRequests = 0;
    const failureNotes: string[] = [];
    const loads: string[] = [];
    let lastIds: [string, string] = ["", ""];
    const lastChanges: [string[], string[]] = [[], []];

    for (let i = 0; i < REPS && !interrupted; i++) {
      const pod = `dep${i}`;
      const host = `${pod}.pods.test`;
      await handlers["pod.create"](podSpec(pod, { preset: "nodejs", port: 3000 }), agent.ctx);
      // the fresh pod answers its placeholder page before its first deploy
      await untilServes(agent.port, "", host, 60_000);
      const firstPage = await get(agent.port, host);
      const va = `v${i}a`;
      await server.commit("app", { "server.js": serverJs(va) }, { message: va });

      const oursFirst = i % 2 === 1;
      const order = oursFirst ? ["ours", "floor"] : ["floor", "ours"];
      for (const who of order) {
        if (who === "floor") {
          const t0 = now();
          await floor.first(va);
          samples.firstFloor.push(now() - t0);
        } else {
          const o = await deployOurs(handlers, agent, pod, `${pod}_1`, url, va);
          samples.firstOurs.push(o.servingMs);
          lastChanges[0] = o.changes;
          samples.firstOursAnswered.push(o.answeredMs);
          firstRequests += o.requests;
          firstFailed += o.failures.length;
          failureNotes.push(...o.failures.map((f) => `rep ${i + 1} first deploy ${f}`));
        }
      }
      if (firstPage.status !== 200)
        failureNotes.push(`rep ${i + 1}: the fresh pod answered ${firstPage.status}`);

      const vb = `v${i}b`;
      await server.commit("app", { "server.js": serverJs(vb) }, { message: vb });
      for (const who of order) {
        if (who === "floor") {
          const t0 = now();
          await floor.codeOnly(vb);
          samples.warmFloor.push(now() - t0);
        } else {
          const o = await deployOurs(handlers, agent, pod, `${pod}_2`, url, vb);
          samples.warmOurs.push(o.servingMs);
          lastChanges[1] = o.changes;
          samples.warmOursAnswered.push(o.answeredMs);
          warmRequests += o.requests;
          warmFailed += o.failures.length;
          failureNotes.push(...o.failures.map((f) => `rep ${i + 1} code-only deploy ${f}`));
        }
      }
      const warmLog = agentLines(messages, `${pod}_2`).join("\n");
      if (!warmLog.includes("dependencies unchanged: reusing node_modules"))
        failureNotes.push(`rep ${i + 1}: the code-only deploy did not reuse node_modules`);
      loads.push(machineLoad());
      lastIds = [`${pod}_1`, `${pod}_2`];
      console.log(
        `rep ${i + 1}/${REPS} (${oursFirst ? "ours first" : "floor first"}): first ${fmt(samples.firstOurs.at(-1) ?? NaN, 0)} ms vs floor ${fmt(samples.firstFloor.at(-1) ?? NaN, 0)} ms; code-only ${fmt(samples.warmOurs.at(-1) ?? NaN, 0)} ms vs floor ${fmt(samples.warmFloor.at(-1) ?? NaN, 0)} ms; ${loads.at(-1)}`,
      );
      await floor.stopApp();
      // the deploy's candidate and build container go a moment after it answered; then the pod
      await sleep(1500);
      await handlers["pod.delete"]({ name: pod }, agent.ctx);
    }
    if (interrupted) return;

    const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])) as Record<
      keyof typeof samples,
      number
    >;
    console.log(`\nmedians of ${REPS} repetitions (variants interleaved, order rotating):\n`);
    console.log(
      formatTable(
        ["measure", "ours (p50)", "floor (p50)", "ratio"],
        [
          [
            "first deploy: deploy → new commit answers",
            `${fmt(m.firstOurs, 0)} ms`,
            `${fmt(m.firstFloor, 0)} ms`,
            `${fmt(m.firstOurs / m.firstFloor)}x`,
          ],
          [
            "  … until pod.deploy answered",
            `${fmt(m.firstOursAnswered, 0)} ms`,
            "",
            `${fmt(m.firstOursAnswered / m.firstFloor)}x`,
          ],
          [
            "code-only deploy: deploy → new commit answers",
            `${fmt(m.warmOurs, 0)} ms`,
            `${fmt(m.warmFloor, 0)} ms`,
            `${fmt(m.warmOurs / m.warmFloor)}x`,
          ],
          [
            "  … until pod.deploy answered",
            `${fmt(m.warmOursAnswered, 0)} ms`,
            "",
            `${fmt(m.warmOursAnswered / m.warmFloor)}x`,
          ],
          ["failed requests during first deploys", `${firstFailed} of ${firstRequests}`, "", ""],
          ["failed requests during code-only deploys", `${warmFailed} of ${warmRequests}`, "", ""],
        ],
      ),
    );
    console.log(
      `\nfloor: first = git clone --depth 1 + npm ci (warm cache) + node server.js + port answers; code-only = git fetch --depth 1 + checkout + app restarted + port answers`,
    );
    console.log(
      `samples (ms): ${JSON.stringify(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map((x) => Math.round(x))])))}`,
    );
    for (const note of failureNotes) console.log(`note: ${note}`);
    console.log(`\nwhere the last repetition's time went (the agent's own log lines):`);
    console.log(`first deploy (${lastIds[0]}):\n  ${agentLines(messages, lastIds[0]).join("\n  ")}`);
    console.log(`  what the pod's address answered: ${lastChanges[0].join(", ")}`);
    console.log(`code-only deploy (${lastIds[1]}):\n  ${agentLines(messages, lastIds[1]).join("\n  ")}`);
    console.log(`  what the pod's address answered: ${lastChanges[1].join(", ")}`);
    console.log(`\nmachine per repetition: ${loads.join(" | ")}`);
    console.log(`machine at the end: ${machineLoad()}`);
    v.ratio({
      figure: "first deploy → new commit answers vs clone + npm ci + node + port",
      ours: m.firstOurs,
      floor: m.firstFloor,
      target: TARGET.firstRatio,
      unit: "ms",
    });
    v.ratio({
      figure: "code-only deploy → new commit answers vs fetch + checkout + restart + port",
      ours: m.warmOurs,
      floor: m.warmFloor,
      target: TARGET.warmRatio,
      unit: "ms",
    });
    v.absolute({
      figure: `failed requests during the deploys (of ${firstRequests + warmRequests})`,
      value: firstFailed + warmFailed,
      limit: TARGET.failed,
      unit: "",
    });
    v.finish();
  } finally {
    if (!interrupted) await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
