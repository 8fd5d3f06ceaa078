/**
 * The dashboard's speed and weight (issue #26 item 7), beside the same data as a bare JSON API call
 * in the same run:
 *
 *   tsx bench/dashboard.ts [--pods 1000] [--reps 40] [--warmup 5] [--polls 20] [--samples 12]
 *
 * The Worker in workerd (bench/support/worker.ts, behind wrangler's dev proxy as `npm start` runs it) on a
 * local D1 seeded before it starts (bench/support/fleet.ts): one team with `--pods` pods (1 in 7
 * stopped), its owner signed in (a session row), and a CPU/memory sample every 5 minutes of the last
 * hour for every pod (what the list's sparklines read; `--samples 0` leaves them out, to see what
 * they cost). No Docker: the pods list renders from D1.
 *
 * 1. Time to first byte of the pods list, `GET /app` (signed in with the session cookie; the first
 *    page as the dashboard pages it, 50 pods), beside `GET /api/pods?limit=50&offset=0` (the same
 *    team, the same page, Bearer token): target ≤ 1.5× at the median. Also the list's live fragment
 *    `GET /app/pods/rows` (what htmx fetches on its poll), whose time is the render time of part 3.
 *    The three take turns within each repetition, over one kept-alive connection each, as a browser
 *    and a script would.
 * 2. Bytes shipped per page: each main page's HTML and the scripts and stylesheets it links (fetched
 *    from the Worker), raw and gzipped (zlib, level 6, as a CDN's compression would send them). Rule
 *    (item 7): a page's scripts ≤ 50 KB gzipped, except the terminal island (xterm, on its tab) and
 *    the charts island (uPlot, on the metrics tab); a page that links them is checked without them.
 * 3. Live-status delay: a running pod on the first page is stopped by a write to the D1 file while the
 *    Worker runs (the sqlite3 CLI, as an agent's report would change the row), and the fragment is
 *    polled back to back until its row shows it: the polls begun after the write that still showed
 *    the old status (target: 0, nothing cached between D1 and the page), and the worst case a
 *    person waits = the page's poll interval (read from its `hx-trigger`) + the fragment's render
 *    time (p99 of part 1), beside the "within 2 s of the change" (item 2).
 *
 * Everything made here (the persist directory, the Worker) is removed at the end, also on failure or
 * Ctrl-C.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { freePort } from "../test/e2e/support/stack";
import { fmt, formatTable, median, percentile } from "./stats";
import { positiveInt } from "./support/args";
import { insertRows, seedFleet, seedSessions } from "./support/fleet";
import { interleaved, machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";
import { applyMigrations, openLocalD1, startLocalWorker } from "./support/worker";

const TARGET = { ttfb: 1.5, scriptGzipKb: 50, livePromiseMs: 2000 };
const PAGE_SIZE = 50;
/** the islands item 7 exempts from the script budget, by asset name */
const EXEMPT = /^\/app\/assets\/(xterm|xterm-fit|terminal|uplot|metrics)[.-]/;

const { values: args } = parseArgs({
  options: {
    pods: { type: "string", default: "1000" },
    reps: { type: "string", default: "40" },
    warmup: { type: "string", default: "5" },
    polls: { type: "string", default: "20" },
    samples: { type: "string", default: "12" },
  },
});
const PODS = positiveInt("pods", args.pods);
const REPS = positiveInt("reps", args.reps);
const WARMUP = Number(args.warmup);
if (!Number.isInteger(WARMUP) || WARMUP < 0) throw new Error("--warmup: expected an integer ≥ 0");
const POLLS = positiveInt("polls", args.polls);
/** metrics samples a pod in the last hour (the sparklines' 12 points); 0 shows the rows' cost without them */
const SAMPLES = Number(args.samples);
if (!Number.isInteger(SAMPLES) || SAMPLES < 0 || SAMPLES > 12) throw new Error("--samples: 0 to 12");

const run = promisify(execFile);
const v = verdicts("dashboard");

interface Answer {
  status: number;
  ttfbMs: number;
  totalMs: number;
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

/** A GET on a kept-alive connection: the time to the first byte of the body, and to its end. */
function get(base: string, pathname: string, headers: Record<string, string>, agent: Agent): Promise<Answer> {
  const url = new URL(pathname, base);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let ttfb = 0;
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        headers,
        agent,
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => {
          if (chunks.length === 0) ttfb = performance.now() - t0;
          chunks.push(c);
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            ttfbMs: ttfb || performance.now() - t0,
            totalMs: performance.now() - t0,
            body: Buffer.concat(chunks),
            headers: res.headers,
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timeout: ${pathname}`)));
    req.on("error", reject);
    req.end();
  });
}

const must = (what: string, a: Answer) => {
  if (a.status !== 200) throw new Error(`${what}: ${a.status} ${a.body.toString().slice(0, 300)}`);
  return a;
};

/** The scripts and stylesheets a page of ours links (our own markup, attributes in our order). */
function linkedAssets(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)) out.push(m[1] as string);
  for (const m of html.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*>/g)) {
    const href = /\bhref="([^"]+)"/.exec(m[0])?.[1];
    if (href) out.push(href);
  }
  return [...new Set(out.map((u) => u.replaceAll("&amp;", "&")))];
}

async function main() {
  console.log(`at start: ${machineLoad()}`);
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-dashboard-bench-"));
  let worker: Awaited<ReturnType<typeof startLocalWorker>> | undefined;
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      await worker?.stop();
      await rm(dir, { recursive: true, force: true });
    })();
    return cleaned;
  };
  process.once("SIGINT", () => {
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    // ------------------------------------------------------------------------------------ seeding
    const t0 = performance.now();
    await applyMigrations(dir);
    const { d1, dispose } = await openLocalD1(dir);
    let token: string;
    try {
      await seedFleet(d1, { pods: PODS, teams: 1, accounts: true, now: new Date().toISOString() });
      [token = ""] = await seedSessions(d1, [0]);
      // a sample every 5 minutes of the last hour for every pod: the sparklines' points
      const at = Date.now();
      await insertRows(
        d1,
        "pod_metrics",
        ["pod_id", "recorded_at", "cpu_usage", "memory_usage", "storage_used", "network_in", "network_out"],
        PODS * SAMPLES,
        (k) => [
          `pod_${Math.floor(k / SAMPLES)}`,
          new Date(at - (k % SAMPLES) * 300_000 - 1000).toISOString(),
          (k * 7) % 100,
          (k * 13) % 100,
          1_000_000,
          1000,
          1000,
        ],
      );
    } finally {
      await dispose();
    }
    console.log(`seeded ${PODS} pods in one team in ${fmt((performance.now() - t0) / 1000, 1)} s`);
    // The dashboard answers only on PUBLIC_URL's host (worker/dashboard/security.ts), so the Worker
    // is reached at its own address as `npm start` serves it: through wrangler's dev proxy, on a port
    // chosen up front. The page and the API pay that hop alike.
    const port = await freePort();
    worker = await startLocalWorker({
      persistDir: dir,
      port,
      vars: { PUBLIC_URL: `http://127.0.0.1:${port}` },
    });
    const base = worker.url;
    console.log(`Worker: ${base} (wrangler's dev proxy), started in ${fmt(worker.timings.startMs, 0)} ms`);
    const cookie = { cookie: `pod_session=${token}` };
    const bearer = { authorization: `Bearer ${token}` };
    const agents = {
      page: new Agent({ keepAlive: true }),
      api: new Agent({ keepAlive: true }),
      rows: new Agent({ keepAlive: true }),
    };
    const rowsPath = `/app/pods/rows?offset=0&limit=${PAGE_SIZE}`;

    // the page, the API and the fragment show the same first page
    const page = must("GET /app", await get(base, "/app", cookie, agents.page)).body.toString();
    const api = JSON.parse(
      must(
        "GET /api/pods",
        await get(base, `/api/pods?limit=${PAGE_SIZE}&offset=0`, bearer, agents.api),
      ).body.toString(),
    ) as { pods: { name: string; status: string }[]; total: number };
    if (api.total !== PODS || api.pods.length !== PAGE_SIZE)
      throw new Error(`GET /api/pods: total ${api.total}, ${api.pods.length} on the page`);
    for (const p of api.pods)
      if (!page.includes(`>${p.name}</a>`)) throw new Error(`GET /app lacks ${p.name}`);
    if (!page.includes(`of ${PODS}`)) throw new Error(`GET /app does not say "of ${PODS}"`);

    // ---------------------------------------------------------------------------------- 1. TTFB
    const ttfb: Record<string, number[]> = { "GET /app": [], "GET /api/pods": [], "GET /app/pods/rows": [] };
    const total: Record<string, number[]> = { "GET /app": [], "GET /api/pods": [], "GET /app/pods/rows": [] };
    const bytes: Record<string, number> = {};
    const one = (name: string, p: string, headers: Record<string, string>, agent: Agent) => async () => {
      const a = must(name, await get(base, p, headers, agent));
      ttfb[name]?.push(a.ttfbMs);
      total[name]?.push(a.totalMs);
      bytes[name] = a.body.byteLength;
    };
    await interleaved(
      {
        "GET /app": one("GET /app", "/app", cookie, agents.page),
        "GET /api/pods": one("GET /api/pods", `/api/pods?limit=${PAGE_SIZE}&offset=0`, bearer, agents.api),
        "GET /app/pods/rows": one("GET /app/pods/rows", rowsPath, cookie, agents.rows),
      },
      REPS + WARMUP,
      0,
    );
    for (const k of Object.keys(ttfb)) {
      ttfb[k] = (ttfb[k] ?? []).slice(WARMUP);
      total[k] = (total[k] ?? []).slice(WARMUP);
    }
    console.log(`\n1. the first page of ${PODS} pods, ${REPS} repetitions after ${WARMUP} warm-up (ms)`);
    console.log(
      formatTable(
        ["request", "TTFB p50", "TTFB p99", "total p50", "bytes"],
        Object.keys(ttfb).map((k) => [
          k,
          fmt(median(ttfb[k] ?? []), 1),
          fmt(percentile(ttfb[k] ?? [], 99), 1),
          fmt(median(total[k] ?? []), 1),
          String(bytes[k] ?? 0),
        ]),
      ),
    );
    v.ratio({
      figure: `GET /app TTFB vs GET /api/pods, ${PODS} pods, page of ${PAGE_SIZE} (median)`,
      ours: median(ttfb["GET /app"] ?? []),
      floor: median(ttfb["GET /api/pods"] ?? []),
      target: TARGET.ttfb,
      unit: "ms",
    });

    // ------------------------------------------------------------------------------ 2. bytes per page
    const podName = api.pods.find((p) => p.status === "running")?.name ?? api.pods[0]?.name ?? "";
    const pages = [
      "/app",
      "/app/new",
      `/app/pods/${podName}`,
      `/app/pods/${podName}/logs`,
      `/app/pods/${podName}/metrics`,
      `/app/pods/${podName}/files`,
      `/app/pods/${podName}/terminal`,
      `/app/pods/${podName}/env`,
      `/app/pods/${podName}/deploys`,
      `/app/pods/${podName}/backups`,
      "/app/team",
      "/app/account",
      "/app/billing",
    ];
    const assetCache = new Map<string, { raw: number; gz: number; script: boolean }>();
    const assetAgent = new Agent({ keepAlive: true });
    const rows: string[][] = [];
    let worstScript = { page: "", kb: 0 };
    for (const p of pages) {
      const a = await get(base, p, cookie, assetAgent);
      const html = a.body.toString();
      const sizes = { raw: a.body.byteLength, gz: gzipSync(a.body, { level: 6 }).byteLength };
      let scriptGz = 0;
      let exemptGz = 0;
      for (const u of linkedAssets(html)) {
        let asset = assetCache.get(u);
        if (!asset) {
          const r = must(`asset ${u}`, await get(base, u, {}, assetAgent));
          const type = String(r.headers["content-type"] ?? "");
          asset = {
            raw: r.body.byteLength,
            gz: gzipSync(r.body, { level: 6 }).byteLength,
            script: type.includes("javascript"),
          };
          assetCache.set(u, asset);
        }
        sizes.raw += asset.raw;
        sizes.gz += asset.gz;
        if (asset.script) {
          if (EXEMPT.test(new URL(u, base).pathname)) exemptGz += asset.gz;
          else scriptGz += asset.gz;
        }
      }
      const kb = scriptGz / 1024;
      if (kb > worstScript.kb) worstScript = { page: p, kb };
      rows.push([
        p.replace(podName, "{pod}"),
        String(a.status),
        fmt(a.body.byteLength / 1024, 1),
        fmt(sizes.raw / 1024, 1),
        fmt(sizes.gz / 1024, 1),
        fmt(kb, 1),
        exemptGz ? fmt(exemptGz / 1024, 1) : "-",
      ]);
      if (a.status !== 200) console.warn(`  ${p} answered ${a.status}: its figures are of that answer`);
    }
    console.log(`\n2. bytes shipped per page (KB; the pod is ${podName}, seeded without a host)`);
    console.log(
      formatTable(
        ["page", "status", "HTML", "total raw", "total gzip", "scripts gzip", "islands gzip (exempt)"],
        rows,
      ),
    );
    v.absolute({
      figure: `largest page script, gzipped, islands exempt (${worstScript.page.replace(podName, "{pod}")})`,
      value: worstScript.kb,
      limit: TARGET.scriptGzipKb,
      unit: "KB",
      promise: true,
    });

    // ---------------------------------------------------------------------------- 3. live status
    const interval = /hx-trigger="every (\d+(?:\.\d+)?)(ms|s)"/.exec(page);
    if (!interval) throw new Error("GET /app: no hx-trigger poll on the pod rows");
    const pollMs = Number(interval[1]) * (interval[2] === "s" ? 1000 : 1);
    const dbDir = path.join(dir, "v3", "d1", "miniflare-D1DatabaseObject");
    const dbFile = (await readdir(dbDir)).find((f) => f.endsWith(".sqlite"));
    if (!dbFile) throw new Error(`no D1 database file in ${dbDir}`);
    const running = api.pods.filter((p) => p.status === "running").slice(0, POLLS);
    const rowOf = (html: string, name: string) => {
      const at = html.indexOf(`>${name}</a>`);
      const end = html.indexOf("</tr>", at);
      return at < 0 || end < 0 ? "" : html.slice(at, end);
    };
    const stale: number[] = [];
    const seenAfter: number[] = [];
    for (const pod of running) {
      await run("sqlite3", [
        "-cmd",
        ".timeout 5000",
        path.join(dbDir, dbFile),
        `UPDATE pods SET status = 'stopped' WHERE name = '${pod.name}'`,
      ]);
      const written = performance.now();
      let old = 0;
      for (;;) {
        const a = must("fragment", await get(base, rowsPath, cookie, agents.rows));
        if (rowOf(a.body.toString(), pod.name).includes(">stopped<")) break;
        old++;
        if (old > 100) throw new Error(`the fragment never showed ${pod.name} stopped`);
      }
      stale.push(old);
      seenAfter.push(performance.now() - written);
    }
    const renderP99 = percentile(ttfb["GET /app/pods/rows"] ?? [], 99);
    const renderTotalP99 = percentile(total["GET /app/pods/rows"] ?? [], 99);
    console.log(
      `\n3. live status, ${running.length} pods stopped in D1 one at a time: polls begun after the write that still showed "running": ${stale.reduce((a, b) => a + b, 0)}; write → fragment showing it: p50 ${fmt(median(seenAfter), 1)} ms, max ${fmt(Math.max(...seenAfter), 1)} ms`,
    );
    const worst = pollMs + renderTotalP99;
    console.log(
      `   the page polls every ${pollMs} ms; the fragment renders in ${fmt(median(total["GET /app/pods/rows"] ?? []), 1)} ms p50, ${fmt(renderTotalP99, 1)} ms p99 (TTFB p99 ${fmt(renderP99, 1)} ms): worst case from a change to the page ${fmt(worst, 0)} ms`,
    );
    v.absolute({
      figure: "fragment polls after a D1 change still showing the old status",
      value: stale.reduce((a, b) => a + b, 0),
      limit: 0,
      unit: "polls",
    });
    v.absolute({
      figure: `live-status worst case (poll ${pollMs} ms + fragment p99)`,
      value: worst,
      limit: TARGET.livePromiseMs,
      unit: "ms",
      promise: true,
    });
  } finally {
    console.log(`\nat end: ${machineLoad()}`);
    await cleanup();
  }
  v.finish();
}

await main();
