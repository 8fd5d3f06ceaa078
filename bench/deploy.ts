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
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { DeployLogMessage } from "../agent/git/log";
import { createHandlers } from "../agent/handlers/pods";
import { type Agent, podSpec, startAgent } from "../test/agent/helpers";
import { type GitServer, startGitServer } from "../test/support/git-server";
import { appBase, serverJs } from "./deploy/app";
import { Floor } from "./deploy/floor";
import { agentLines, deployOurs } from "./deploy/ours";
import { get, untilServes } from "./deploy/probe";
import { report, type Samples } from "./deploy/report";
import { DEP, now, npmEnv, REPS, run, sleep } from "./deploy/settings";
import { fmt } from "./stats";
import { machineLoad } from "./support/sampling";

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

    const samples: Samples = {
      firstOurs: [],
      firstOursAnswered: [],
      firstFloor: [],
      warmOurs: [],
      warmOursAnswered: [],
      warmFloor: [],
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
    report({
      samples,
      firstFailed,
      firstRequests,
      warmFailed,
      warmRequests,
      failureNotes,
      loads,
      lastIds,
      lastChanges,
      messages,
    });
  } finally {
    if (!interrupted) await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
