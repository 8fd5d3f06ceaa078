/**
 * Soak (issue #28 item 7): `--minutes` (30) of mixed operations by `--tenants` (10) tenants through the
 * public API of the real stack (Worker in workerd, a registered host, the agent, Docker, nginx), with the
 * git deploys against the smart-HTTP git server on 127.0.0.1 (test/support/git-server.ts).
 *
 *   tsx bench/soak.ts [--minutes 30] [--tenants 10] [--sample-s 60] [--think-ms 2000] [--heap-dir <dir>]
 *   npm run bench:soak -- --minutes 10
 *
 * Each tenant is its own account and team with one long-lived `nodejs` pod on the Build plan (its git
 * repository connected) and, from time to time, a short-lived `static` pod. Each tenant runs one
 * operation at a time, as a user's script would, and waits for an asynchronous one to end (its 202,
 * then its state polled through the API) before the next, with `--think-ms` (± half) in between.
 * The next operation is drawn by weight among the kinds whose per-tenant interval has passed (the
 * intervals keep every tenant under the fair-share limits of worker/http/rate-limit.ts, so a 429 is
 * a bench bug, shown, not a verdict):
 *
 * - `file write` — PUT a 4 KB file (one of 20 names) under ~/app/soak, read back through the API, and
 *   the bytes must be the ones written;
 * - `exec` — POST exec of a shell line reading those files, exit code 0;
 * - `env` — PUT a variable (the app restarts);
 * - `deploy` — a commit pushed to the tenant's repository, POST git/deploy, until `success` (new
 *   code served through the host's ingress is the agent's health check);
 * - `backup` — POST backups until `completed` (the oldest deleted first at the plan's limit);
 * - `restore` — the newest completed backup, until its `restore_completed` event;
 * - `service install` / `service remove` — Redis, until `running` / 200;
 * - `create` / `delete` — a static pod, until the list says `running` / 200.
 *
 * Printed: per kind the count (ok, ended in error, not ended, refused), p50/p99 of the time until the
 * operation ended (for a synchronous call, its answer); every 5xx (and every request that got no
 * answer) with its method, path and body; every operation that ended in error with its reason; and
 * every `--sample-s` (60) the agent's RSS, workerd's RSS, the JS heap after a garbage collection of the
 * Worker's isolate and the sum of the local runtime's own isolates (D1, R2, Workflows engines…: both
 * through workerd's inspector, bench/soak/heap.ts), the size of the HostAgent Durable Object's storage
 * (its SQLite files in the local persist directory) and of the whole persist directory, with their
 * slope. `--heap-dir <dir>` keeps each sample's heap snapshot of the Worker's isolate there, for
 * bench/soak/heap-diff.ts (what grew between two, by constructor and retainer).
 *
 * Goals (verdicts through bench/support/verdict.ts; non-zero exit when one is missed):
 * - 5xx and unanswered requests: 0, apart from the documented 503s while a host is away
 *   (docs/pods.md: "server … is unavailable: its agent is not connected", "… is offline"), which are
 *   listed and counted beside it (none is expected: no host goes away in this soak);
 * - operations not ended (an operation past its time limit, or anything still in flight through
 *   the API once every tenant stopped: a pod `creating`, a backup `in_progress`, a deployment
 *   `deploying`, a service `installing`): 0;
 * - operations that ended in error or were refused with a 4xx other than 429: 0;
 * - flat: the least-squares slope over the samples of the last two thirds of the run (the first
 *   third is warm-up: caches, JIT, SQLite pages) at most 1 MB/min for the agent's RSS and 0.5 MB/min
 *   for the Worker isolate's JS heap, what of workerd is ours. workerd's RSS (≤ 2 MB/min) is shown
 *   beside it, not judged: it adds the local runtime's native memory, which keeps every finished
 *   Workflow instance open (~0.4 MB each) and stays at the peak of live Durable Object instances
 *   (~0.2 MB each; bench/soak/do-churn.ts), and says nothing about production. With fewer than 4
 *   samples in that window (a run shorter than ~5 minutes at the default sampling) the slopes are
 *   shown, not judged. The HostAgent's storage keeps settled commands for JOURNAL_RETENTION_MS
 *   (an hour) and grows by design until then: its slope (at most 0.25 MB/min) is judged over the
 *   samples of that window taken after the first 61 minutes, so only in a run of ~95 minutes or
 *   more; shown otherwise.
 *
 * Everything made here is removed at the end, also on failure or Ctrl-C.
 */
import { mkdir } from "node:fs/promises";
import { apiClient, signUp } from "../test/e2e/support/api";
import { waitForHostOnline } from "../test/e2e/support/pods";
import { type Stack, sleep, startStack } from "../test/e2e/support/stack";
import { type GitServer, startGitServer } from "../test/support/git-server";
import { type HeapSession, openWorkerHeap } from "./soak/heap";
import {
  expectStatus,
  type Kind,
  notEnded,
  progress,
  recordedClient,
  serverErrors,
  until,
} from "./soak/records";
import { report } from "./soak/report";
import { type Sample, sample, workerdPid } from "./soak/samples";
import { HEAP_DIR, LIMIT_MS, MINUTES, now, SAMPLE_S, TENANTS } from "./soak/settings";
import { nodeApp, podList, type Tenant, tenantLoop } from "./soak/tenants";
import { fmt } from "./stats";
import { machineLoad } from "./support/sampling";

let git: GitServer | undefined;
let stack: Stack | undefined;
let heap: HeapSession | undefined;

// ------------------------------------------------------------------------------------------- the run

/** What is still in flight through the API once every tenant stopped (each a not-ended operation). */
async function inFlight(tenants: Tenant[]): Promise<{ tenant: number; kind: Kind; what: string }[]> {
  const left: { tenant: number; kind: Kind; what: string }[] = [];
  for (const t of tenants) {
    for (const p of (await podList(t).catch(() => undefined)) ?? []) {
      if (p.status === "creating") left.push({ tenant: t.i, kind: "create", what: `pod ${p.name} creating` });
    }
    const backups = await t.api.get(`/api/pods/${t.pod}/backups`);
    for (const b of (backups.body?.backups ?? []) as { id: string; status: string }[]) {
      if (b.status === "in_progress")
        left.push({ tenant: t.i, kind: "backup", what: `backup ${b.id} in_progress` });
    }
    const deployments = await t.api.get(`/api/pods/${t.pod}/git/deployments?limit=50`);
    for (const d of (deployments.body?.deployments ?? []) as { id: string; status: string }[]) {
      if (d.status === "deploying")
        left.push({ tenant: t.i, kind: "deploy", what: `deployment ${d.id} deploying` });
    }
    const services = await t.api.get(`/api/pods/${t.pod}/services`);
    for (const s of (Array.isArray(services.body) ? services.body : []) as {
      service_type: string;
      status: string;
    }[]) {
      if (s.status === "installing")
        left.push({ tenant: t.i, kind: "service install", what: `${s.service_type} installing` });
    }
  }
  return left;
}

async function setUp(git: GitServer, stack: Stack): Promise<Tenant[]> {
  const tag = stack.prefix.slice(-4);
  const tenants: Tenant[] = [];
  for (let i = 0; i < TENANTS; i++) {
    const user = await signUp(stack.api, `Soak ${i}`);
    const tenant: Tenant = {
      i,
      api: recordedClient(stack.api, user.token, `10.77.${i}.1`),
      git,
      tag,
      pod: `sk${tag}-t${i}`,
      repo: `t${i}/app`,
      churnCount: 0,
      redis: false,
      round: 0,
      lastAt: {},
    };
    tenants.push(tenant);
  }
  await waitForHostOnline(apiClient(stack.api, (await signUp(stack.api, "Soak watcher")).token));
  for (const t of tenants) {
    await git.createRepo(t.repo, nodeApp(`tenant ${t.i} start`));
    expectStatus(
      await t.api.post("/api/pods", { name: t.pod, preset: "nodejs", plan_slug: "build" }),
      `create ${t.pod}`,
      202,
    );
  }
  const since = now();
  for (const t of tenants) {
    await until(`${t.pod} running`, since, LIMIT_MS.create * 2, async () => {
      const p = (await podList(t))?.find((x) => x.name === t.pod);
      if (p && p.status !== "creating" && p.status !== "running") throw new Error(`${t.pod}: ${p.status}`);
      return p?.status === "running" ? true : undefined;
    });
    expectStatus(
      await t.api.post(`/api/pods/${t.pod}/git`, { repo_url: git.url(t.repo), branch: "main" }),
      "git",
      201,
    );
  }
  // the setup's requests are not the soak's
  serverErrors.length = 0;
  progress.requests = 0;
  console.log(
    `set up: ${TENANTS} tenants, each a nodejs pod with its repository, in ${fmt((now() - since) / 1000, 0)} s`,
  );
  return tenants;
}

async function main() {
  console.log(`soak: ${MINUTES} min, ${TENANTS} tenants; ${machineLoad()}`);
  git = await startGitServer();
  const running = await startStack("soak", { direct: true, inspector: true });
  stack = running;
  const tenants = await setUp(git, running);
  const workerd = await workerdPid(running);
  if (workerd === undefined) console.warn("could not find the Worker's workerd process: no workerd figures");
  heap = running.worker.inspectorUrl
    ? await openWorkerHeap(running.worker.inspectorUrl).catch((e) => {
        console.warn(`the Worker's inspector: ${e}: no JS heap figures`);
        return undefined;
      })
    : undefined;
  if (HEAP_DIR) await mkdir(HEAP_DIR, { recursive: true });
  progress.t0 = now();
  const endAt = progress.t0 + MINUTES * 60_000;
  const samples: Sample[] = [await sample(running, workerd, heap)];
  const printSample = (s: Sample) =>
    console.log(
      `  ${fmt(s.atMin, 1)} min: agent ${fmt(s.agentMb, 1)} MB, workerd ${fmt(s.workerdMb, 1)} MB (JS heaps: the Worker's ${fmt(s.heapMb, 1)} MB, the local runtime's ${fmt(s.runtimeHeapMb, 1)} MB), HostAgent storage ${fmt(s.hostAgentMb, 2)} MB; ${progress.requests} requests, ${serverErrors.length} 5xx; ${machineLoad()}`,
    );
  printSample(samples[0] as Sample);
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const next = progress.t0 + samples.length * SAMPLE_S * 1000;
      while (sampling && now() < next) await sleep(Math.min(1000, next - now()));
      if (!sampling) break;
      const s = await sample(running, workerd, heap);
      samples.push(s);
      printSample(s);
    }
  })();
  await Promise.all(tenants.map((t) => tenantLoop(t, endAt)));
  sampling = false;
  await sampler;
  // the end state, once every tenant stopped: a last sample, then what is still in flight
  samples.push(await sample(running, workerd, heap));
  printSample(samples[samples.length - 1] as Sample);
  notEnded.push(...(await inFlight(tenants)));
  report(samples);
}

let cleaning: Promise<void> | undefined;
const cleanUp = () => {
  cleaning ??= (async () => {
    heap?.close();
    await stack?.stop().catch((e) => console.error(`stack stop: ${e}`));
    await git?.close().catch(() => undefined);
  })();
  return cleaning;
};
process.on("SIGINT", () => {
  console.error("\ninterrupted: removing what the soak made");
  void cleanUp().then(() => process.exit(130));
});

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(cleanUp);
