/**
 * The edge hop (issue #31 item 4, docs/edge.md): a pod's page through the Worker's edge router beside
 * the same page from the host's ingress reached directly (signed as the edge signs, so the only
 * difference is the edge), in the same run on the real stack (Worker in workerd + agent + Docker +
 * nginx). Requests take turns between the paths (each round in another order) so machine load hits
 * all of them alike.
 *
 *   npm run bench -- edge [-- --requests 1000]
 *
 * 1000 requests a path by default (400 before): a p99 of 400 samples is the 4th slowest, one scheduling
 * stall of this 2-core machine more or less moves it by tens of ms; of 1000 it is the 10th.
 *
 * Targets: the edge adds ≤ 2 ms at p50 and ≤ 5 ms at p99 (route served from the cache); a 100 MB
 * download through the edge ≥ 90 % of the direct throughput.
 *
 * Judged: the edge as a deployment runs it (bench/support/deployed-worker.ts). The same Worker code
 * and D1 data as the stack's Worker (the one the agent and the API use, which created the pod: a copy
 * of its D1 files taken once the pod runs, so the second process never disturbs the stack's writes),
 * but the bundle `wrangler deploy` uploads, served by workerd on a socket whose service is the Worker
 * itself, its `fetch` going straight to the network. What differs from `npm start` is only what
 * wrangler dev puts around a Worker and no deployment has: its dev bundle (a request-body-draining
 * and a JSON-error middleware around the entry, a port-checking `fetch` wrapper), Miniflare's entry
 * worker in front (a service-binding hop that re-wraps every response), Miniflare's CF-Connecting-IP
 * stripping worker behind (a second hop on every outbound `fetch`) and, at `npm start`'s address,
 * wrangler's ProxyWorker in a workerd of its own. On Cloudflare the Worker runs in workerd with none
 * of these, so that is the hop the targets are about; the judged path keeps everything the
 * edge does on a visit (the route cache, the change feed's background read, the proof, the header
 * work, the streamed `fetch`) and every sample (nothing discarded).
 *
 * Shown, not judged, so nobody mistakes one for the other:
 *   - the edge under wrangler dev: the stack's Worker at its own workerd (`startStack({ direct:
 *     true })`: dev bundle, entry worker, stripping worker), and at `npm start`'s address (+ the
 *     ProxyWorker; no download there);
 *   - a bare pass-through Worker (one `fetch` of the same signed request to the same ingress, nothing
 *     else) in both shapes: deployed (edge − bare is what the edge's own code costs) and with
 *     Miniflare's defaults (bare − direct there is the local runtime's own hop).
 */
import http from "node:http";
import { parseArgs } from "node:util";
import { Miniflare } from "miniflare";
import { edgeSecretFromToken } from "../shared/edge-proof";
import { signUp } from "../test/e2e/support/api";
import { waitForHostOnline, waitForPodStatus } from "../test/e2e/support/pods";
import { startStack } from "../test/e2e/support/stack";
import { edgeHeaders } from "../test/support/edge";
import { fmt, formatTable, percentile } from "./stats";
import { positiveInt } from "./support/args";
import { type DeployedShapeWorker, startDeployedShapeWorker } from "./support/deployed-worker";
import { verdicts } from "./support/verdict";

const { values } = parseArgs({ options: { requests: { type: "string", default: "1000" } } });
const REQUESTS = positiveInt("requests", values.requests ?? "1000");
const BIG_MB = 100;

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** GET, the body read and dropped; resolves with ms and bytes */
function get(
  port: number,
  headers: Record<string, string>,
  path: string,
): Promise<{ ms: number; bytes: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ host: "127.0.0.1", port, path, headers, agent }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => {
        bytes += c.length;
      });
      res.on("end", () => resolve({ ms: performance.now() - t0, bytes, status: res.statusCode ?? 0 }));
    });
    req.on("error", (error) => reject(new Error(`GET ${path} on port ${port}: ${String(error)}`)));
    req.end();
  });
}

/** A Worker that only forwards (the request's method, headers and body as they are, to `origin`). */
const BARE_SCRIPT = `export default {
  fetch(request, env) {
    const url = new URL(request.url);
    return fetch(env.ORIGIN + url.pathname + url.search, {
      method: request.method, headers: request.headers, body: request.body, redirect: "manual",
    });
  },
};`;

/**
 * The bare Worker twice in one Miniflare: with the defaults wrangler dev gives a user Worker
 * (reached through Miniflare's entry worker, its `fetch` through the CF-Connecting-IP stripping
 * worker) and in the deployed shape (its own socket, its `fetch` straight out), as
 * bench/support/deployed-worker.ts serves the edge.
 */
async function startBareWorkers(
  origin: string,
): Promise<{ mf: Miniflare; devPort: number; deployedPort: number }> {
  const bare = {
    modules: true,
    compatibilityDate: "2026-04-20", // wrangler.toml's
    compatibilityFlags: ["nodejs_compat"],
    bindings: { ORIGIN: origin },
    script: BARE_SCRIPT,
  };
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    workers: [
      { ...bare, name: "bare-dev-defaults" },
      {
        ...bare,
        name: "bare-deployed-shape",
        unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
        stripCfConnectingIp: false,
      },
    ],
  });
  const url = await mf.ready;
  const direct = await mf.unsafeGetDirectURL("bare-deployed-shape");
  return { mf, devPort: Number(url.port), deployedPort: Number(direct.port) };
}

interface Path {
  label: string;
  fn: (path: string) => Promise<{ ms: number; bytes: number; status: number }>;
  ms: number[];
  /** best of the downloads in MB/s; undefined: this path downloads nothing */
  mbps?: number;
}

// the stack's Worker (API, agent, the pod's creation) at its own workerd: wrangler dev's without the ProxyWorker
const stack = await startStack("benchedge", { direct: true });
let bare: Awaited<ReturnType<typeof startBareWorkers>> | undefined;
let deployed: DeployedShapeWorker | undefined;
const v = verdicts("edge");
try {
  const { api } = await signUp(stack.api, "Bench");
  await waitForHostOnline(api);
  const pod = `edge-${stack.prefix.slice(-4)}`;
  const created = await api.post("/api/pods", { name: pod, preset: "static" });
  if (created.status !== 202) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  await waitForPodStatus(api, pod, "running", 120_000);
  const exec = await api.post(`/api/pods/${pod}/exec`, {
    command: [
      "sh",
      "-c",
      `echo ok > /home/pod_user/app/small.txt && head -c ${BIG_MB}M /dev/zero > /home/pod_user/app/big.bin`,
    ],
  });
  if (exec.body.exit_code !== 0) throw new Error(`exec: ${JSON.stringify(exec.body)}`);

  deployed = await startDeployedShapeWorker(stack.worker);
  console.log(
    `deployed-shape Worker: bundled in ${fmt(deployed.timings.bundleMs, 0)} ms, ` +
      `started in ${fmt(deployed.timings.startMs, 0)} ms (${deployed.url})`,
  );
  bare = await startBareWorkers(`http://127.0.0.1:${stack.ingressPort}`);

  const host = `${pod}.pods.localhost`;
  const secret = await edgeSecretFromToken(stack.agentEnv.PODHOST_AGENT_TOKEN ?? "");
  const signed = (port: number) => (path: string) =>
    get(port, { host, ...edgeHeaders(secret, { host, path }) }, path);
  const visitor = (port: number) => (path: string) => get(port, { host }, path);
  const judged: Path = {
    label: "edge, deployed shape (judged)",
    fn: visitor(Number(new URL(deployed.url).port)),
    ms: [],
    mbps: 0,
  };
  const direct: Path = { label: "host ingress, direct", fn: signed(stack.ingressPort), ms: [], mbps: 0 };
  const bareDeployed: Path = {
    label: "bare Worker, deployed shape",
    fn: signed(bare.deployedPort),
    ms: [],
    mbps: 0,
  };
  const devEdge: Path = {
    label: "edge under wrangler dev (its workerd)",
    fn: visitor(stack.edgePort),
    ms: [],
    mbps: 0,
  };
  const bareDev: Path = {
    label: "bare Worker, Miniflare defaults",
    fn: signed(bare.devPort),
    ms: [],
    mbps: 0,
  };
  const npmStart: Path = {
    label: "edge at npm start's address (+ ProxyWorker)",
    fn: visitor(Number(new URL(stack.worker.url).port)),
    ms: [],
  };
  const paths = [direct, judged, bareDeployed, devEdge, bareDev, npmStart];

  // warm-up: routes cached in every Worker, connections open, the code hot
  for (let i = 0; i < 30; i++) for (const path of paths) await path.fn("/small.txt");
  for (let i = 0; i < REQUESTS; i++) {
    // each round in another order, so that no path always follows the same one
    for (let k = 0; k < paths.length; k++) {
      const path = paths[(i + k) % paths.length];
      if (!path) continue;
      const r = await path.fn("/small.txt");
      if (r.status !== 200) throw new Error(`small page through ${path.label}: ${r.status}`);
      path.ms.push(r.ms);
    }
  }
  const mbps = (r: { ms: number; bytes: number }) => r.bytes / 1024 / 1024 / (r.ms / 1000);
  for (let i = 0; i < 3; i++) {
    for (const path of paths) {
      if (path.mbps === undefined) continue;
      const r = await path.fn("/big.bin");
      if (r.bytes !== BIG_MB * 1024 * 1024)
        throw new Error(`download through ${path.label}: ${r.bytes} bytes`);
      path.mbps = Math.max(path.mbps, mbps(r));
    }
  }
  const p = (xs: number[], q: number) => percentile(xs, q);
  const added = (a: Path, b: Path, q: number) => fmt(p(a.ms, q) - p(b.ms, q));
  console.log(
    formatTable(
      [
        "path",
        "n",
        "p50 ms",
        "p99 ms",
        "+ p50 over direct",
        "+ p99 over direct",
        `${BIG_MB} MB download MB/s`,
      ],
      paths.map((path) => [
        path.label,
        String(path.ms.length),
        fmt(p(path.ms, 50)),
        fmt(p(path.ms, 99)),
        added(path, direct, 50),
        added(path, direct, 99),
        path.mbps === undefined ? "—" : fmt(path.mbps, 0),
      ]),
    ),
  );
  console.log(
    `the edge's own code (edge − bare Worker, deployed shape): ${added(judged, bareDeployed, 50)} ms p50, ` +
      `${added(judged, bareDeployed, 99)} ms p99; under wrangler dev: ${added(devEdge, bareDev, 50)} ms p50, ` +
      `${added(devEdge, bareDev, 99)} ms p99\n` +
      `wrangler dev's own hops (edge under wrangler dev − deployed shape): ${added(devEdge, judged, 50)} ms p50, ` +
      `${added(devEdge, judged, 99)} ms p99\n`,
  );
  v.added({
    figure: "edge hop p50 (cached route)",
    ours: p(judged.ms, 50),
    floor: p(direct.ms, 50),
    limit: 2,
    unit: "ms",
  });
  v.added({
    figure: "edge hop p99 (cached route)",
    ours: p(judged.ms, 99),
    floor: p(direct.ms, 99),
    limit: 5,
    unit: "ms",
  });
  v.atLeast({
    figure: `${BIG_MB} MB download through the edge`,
    ours: judged.mbps ?? Number.NaN,
    floor: direct.mbps ?? Number.NaN,
    target: 0.9,
    unit: "MB/s",
  });
  // the same figures under wrangler dev, beside the verdicts and not counted
  v.shown({
    figure: "edge hop p50 under wrangler dev, added",
    value: p(devEdge.ms, 50) - p(direct.ms, 50),
    limit: 2,
    unit: "ms",
  });
  v.shown({
    figure: "edge hop p99 under wrangler dev, added",
    value: p(devEdge.ms, 99) - p(direct.ms, 99),
    limit: 5,
    unit: "ms",
  });
} finally {
  agent.destroy();
  await deployed?.stop();
  await bare?.mf.dispose();
  await stack.stop();
  v.finish();
}
