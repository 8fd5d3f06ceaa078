/**
 * The edge hop (issue #31 item 4, docs/edge.md): a pod's page through the Worker's edge router beside
 * the same page from the host's ingress reached directly (signed as the edge signs, so the only
 * difference is the edge), in the same run on the real stack (Worker in workerd + agent + Docker +
 * nginx). Requests alternate between the two paths so machine load hits both alike.
 *
 *   npm run bench -- edge [-- --requests 400]
 *
 * Targets: the edge adds ≤ 2 ms at p50 and ≤ 5 ms at p99 (route served from the cache); a 100 MB
 * download through the edge ≥ 90 % of the direct throughput.
 *
 * A third path, shown but not judged, splits the hop: a bare pass-through Worker (one `fetch` of the
 * same signed request to the same ingress, nothing else) in a Miniflare of its own, with the local
 * runtime's defaults the Worker gets from wrangler (Miniflare's entry worker in front, its
 * CF-Connecting-IP stripping worker behind). Edge − bare is what the edge's own code costs (route
 * lookup, proof, headers, wrangler's dev middleware); bare − direct is the local runtime's hop,
 * which no deployment has in this form (there Cloudflare's front line is in front of both paths).
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
import { verdicts } from "./support/verdict";

const { values } = parseArgs({ options: { requests: { type: "string", default: "400" } } });
const REQUESTS = positiveInt("requests", values.requests ?? "400");
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

/**
 * A Worker that only forwards (the request's method, headers and body as they are, to `origin`): the
 * floor of a hop through this runtime, in a Miniflare with wrangler's defaults for a user Worker.
 */
async function startBareWorker(origin: string): Promise<{ mf: Miniflare; port: number }> {
  const mf = new Miniflare({
    modules: true,
    compatibilityDate: "2026-04-20", // wrangler.toml's
    host: "127.0.0.1",
    port: 0,
    bindings: { ORIGIN: origin },
    script: `export default {
      fetch(request, env) {
        const url = new URL(request.url);
        return fetch(env.ORIGIN + url.pathname + url.search, {
          method: request.method, headers: request.headers, body: request.body, redirect: "manual",
        });
      },
    };`,
  });
  const url = await mf.ready;
  return { mf, port: Number(url.port) };
}

// the Worker's own workerd, not wrangler's dev proxy in front of it (a Node hop no deployment has)
const stack = await startStack("benchedge", { direct: true });
let bare: { mf: Miniflare; port: number } | undefined;
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

  const host = `${pod}.pods.localhost`;
  const secret = await edgeSecretFromToken(stack.agentEnv.PODHOST_AGENT_TOKEN ?? "");
  const viaEdge = (path: string) => get(stack.edgePort, { host }, path);
  const direct = (path: string) =>
    get(stack.ingressPort, { host, ...edgeHeaders(secret, { host, path }) }, path);
  bare = await startBareWorker(`http://127.0.0.1:${stack.ingressPort}`);
  const barePort = bare.port;
  const viaBare = (path: string) => get(barePort, { host, ...edgeHeaders(secret, { host, path }) }, path);

  // warm-up: the route cached, connections open, the Worker's code hot
  for (let i = 0; i < 30; i++) {
    await viaEdge("/small.txt");
    await direct("/small.txt");
    await viaBare("/small.txt");
  }
  const edgeMs: number[] = [];
  const directMs: number[] = [];
  const bareMs: number[] = [];
  const paths = [
    { fn: viaEdge, ms: edgeMs },
    { fn: direct, ms: directMs },
    { fn: viaBare, ms: bareMs },
  ];
  for (let i = 0; i < REQUESTS; i++) {
    // each round in another order, so that no path always follows the same one
    for (let k = 0; k < paths.length; k++) {
      const path = paths[(i + k) % paths.length];
      if (!path) continue;
      const r = await path.fn("/small.txt");
      if (r.status !== 200) throw new Error(`small page: ${r.status}`);
      path.ms.push(r.ms);
    }
  }
  const mbps = (r: { ms: number; bytes: number }) => r.bytes / 1024 / 1024 / (r.ms / 1000);
  const downloads = { edge: 0, direct: 0, bare: 0 };
  for (let i = 0; i < 3; i++) {
    const d = await direct("/big.bin");
    const e = await viaEdge("/big.bin");
    const b = await viaBare("/big.bin");
    if ([d, e, b].some((r) => r.bytes !== BIG_MB * 1024 * 1024))
      throw new Error(`download: ${d.bytes} / ${e.bytes} / ${b.bytes} bytes`);
    downloads.direct = Math.max(downloads.direct, mbps(d));
    downloads.edge = Math.max(downloads.edge, mbps(e));
    downloads.bare = Math.max(downloads.bare, mbps(b));
  }
  const p = (xs: number[], q: number) => percentile(xs, q);
  console.log(
    formatTable(
      ["path", "n", "p50 ms", "p99 ms", `${BIG_MB} MB download MB/s`],
      [
        [
          "host ingress, direct",
          String(directMs.length),
          fmt(p(directMs, 50)),
          fmt(p(directMs, 99)),
          fmt(downloads.direct, 0),
        ],
        [
          "bare pass-through Worker",
          String(bareMs.length),
          fmt(p(bareMs, 50)),
          fmt(p(bareMs, 99)),
          fmt(downloads.bare, 0),
        ],
        [
          "through the edge",
          String(edgeMs.length),
          fmt(p(edgeMs, 50)),
          fmt(p(edgeMs, 99)),
          fmt(downloads.edge, 0),
        ],
      ],
    ),
  );
  console.log(
    `the hop split at p50: local runtime (bare − direct) ${fmt(p(bareMs, 50) - p(directMs, 50))} ms, ` +
      `the edge's code (edge − bare) ${fmt(p(edgeMs, 50) - p(bareMs, 50))} ms; at p99: ` +
      `${fmt(p(bareMs, 99) - p(directMs, 99))} ms and ${fmt(p(edgeMs, 99) - p(bareMs, 99))} ms\n`,
  );
  v.added({
    figure: "edge hop p50 (cached route)",
    ours: p(edgeMs, 50),
    floor: p(directMs, 50),
    limit: 2,
    unit: "ms",
  });
  v.added({
    figure: "edge hop p99 (cached route)",
    ours: p(edgeMs, 99),
    floor: p(directMs, 99),
    limit: 5,
    unit: "ms",
  });
  v.atLeast({
    figure: `${BIG_MB} MB download through the edge`,
    ours: downloads.edge,
    floor: downloads.direct,
    target: 0.9,
    unit: "MB/s",
  });
} finally {
  agent.destroy();
  await bare?.mf.dispose();
  await stack.stop();
  v.finish();
}
