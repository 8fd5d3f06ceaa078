/**
 * bench/lifecycle part 1: create → running and create → page through the API, beside the dockerode and
 * CLI floors made in the same rounds; where a create's time goes (the floor's steps one by one, an nginx
 * vhost upsert with 1 and with `--pods` vhosts, the agent's own `pod.create`).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Ingress } from "../../agent/ingress/nginx";
import { renderVhost } from "../../agent/ingress/vhost";
import { createLogger } from "../../agent/logger";
import { freePort, type Stack } from "../../test/e2e/support/stack";
import { formatTable, median } from "../stats";
import { until } from "../support/probe";
import { type Api, type Bench, interleaved, nextPodName, p50, p90, pageAnswers, row } from "./bench";
import type { FloorSteps } from "./floor";
import { API_POLL_MS, now, PAGE_POLL_MS, POD_DOMAIN, PODS, REPS, TARGET, v } from "./settings";

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
export async function createPhase(b: Bench): Promise<void> {
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
