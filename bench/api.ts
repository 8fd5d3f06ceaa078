/**
 * API latency bench: the bare route against authenticated reads, on a local Worker (workerd + local D1).
 *
 *   tsx bench/api.ts [--requests 3000] [--concurrency 16] [--rounds 5] [--warmup 300] [--max-seconds 75]
 *
 * Every route gets the same client (node:http, keep-alive, `--concurrency` closed-loop clients). The
 * measured requests are split into rounds and the routes take turns inside each round (in rotating order),
 * so drift on a busy machine (GC, another process) spreads over all routes instead of landing on one.
 * `--requests` per route is scaled down (the same for every route) when the warm-up's throughput says the
 * measured phase would take longer than `--max-seconds`: the whole run stays under ~2 minutes on a busy
 * machine. Target: the authenticated routes' p50 at most 1.5x the bare route's.
 */
import { availableParallelism, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { fmt, formatTable, summarize } from "./stats";
import { positiveInt } from "./support/args";
import { keepAliveAgent, runLoad } from "./support/load";
import { verdicts } from "./support/verdict";
import { startLocalWorker } from "./support/worker";

const TARGET_RATIO = 1.5;
const v = verdicts("api");

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "3000" },
    concurrency: { type: "string", default: "16" },
    rounds: { type: "string", default: "5" },
    warmup: { type: "string", default: "300" },
    "max-seconds": { type: "string", default: "75" },
  },
});
const REQUESTS = positiveInt("requests", args.requests);
const CONCURRENCY = positiveInt("concurrency", args.concurrency);
const ROUNDS = positiveInt("rounds", args.rounds);
const WARMUP = positiveInt("warmup", args.warmup);
const MAX_SECONDS = positiveInt("max-seconds", args["max-seconds"]);
/** Below this many samples per route a p99 means little; the time budget never cuts deeper. */
const MIN_REQUESTS = 600;

interface Route {
  label: string;
  path: string;
  authenticated: boolean;
}

const ROUTES: Route[] = [
  { label: "GET /health", path: "/health", authenticated: false },
  { label: "GET /api/auth/user", path: "/api/auth/user", authenticated: true },
  { label: "GET /api/teams", path: "/api/teams", authenticated: true },
];

async function register(base: string): Promise<string> {
  const res = await fetch(`${base}/api/auth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": "198.51.100.7" },
    body: JSON.stringify({ email: "bench@example.com", password: "bench-password-1", name: "Bench" }),
  });
  const body = (await res.json()) as { token?: string; error?: string };
  if (res.status !== 201 || !body.token) {
    throw new Error(`register: ${res.status} ${JSON.stringify(body)}`);
  }
  return body.token;
}

async function main() {
  const t0 = performance.now();
  const worker = await startLocalWorker();
  console.log(
    `worker ${worker.url}: prepare ${fmt(worker.timings.prepareMs, 0)} ms, start ${fmt(worker.timings.startMs, 0)} ms`,
  );
  const agent = keepAliveAgent(CONCURRENCY);
  try {
    const token = await register(worker.url);
    const headersOf = (r: Route): Record<string, string> =>
      r.authenticated ? { authorization: `Bearer ${token}` } : {};

    const load = (r: Route, requests: number) =>
      runLoad({
        url: `${worker.url}${r.path}`,
        headers: headersOf(r),
        requests,
        concurrency: CONCURRENCY,
        agent,
      });

    // Warm-up: JIT, workerd's isolate, D1's statement cache and the keep-alive connections.
    let secondsPerRequestEach = 0;
    for (const r of ROUTES) {
      const res = await load(r, WARMUP);
      if (res.failures > 0) {
        throw new Error(`${r.label}: ${res.failures} failed, e.g. ${JSON.stringify(res.firstFailure)}`);
      }
      secondsPerRequestEach += 1 / res.throughput;
    }
    const fitting = Math.floor(MAX_SECONDS / secondsPerRequestEach);
    const requests = Math.min(REQUESTS, Math.max(MIN_REQUESTS, fitting));
    if (requests < REQUESTS) {
      console.log(
        `measuring ${requests} requests per route instead of ${REQUESTS}: the warm-up's pace would take ` +
          `${fmt(REQUESTS * secondsPerRequestEach, 0)} s, over --max-seconds ${MAX_SECONDS}`,
      );
    }

    const latencies = new Map<Route, number[]>(ROUTES.map((r) => [r, []]));
    const elapsed = new Map<Route, number>(ROUTES.map((r) => [r, 0]));
    const perRound = Math.ceil(requests / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      const order = ROUTES.map((_, i) => ROUTES[(i + round) % ROUTES.length] as Route);
      for (const r of order) {
        const res = await load(r, perRound);
        if (res.failures > 0) {
          throw new Error(`${r.label}: ${res.failures} failed, e.g. ${JSON.stringify(res.firstFailure)}`);
        }
        latencies.get(r)?.push(...res.latencies);
        elapsed.set(r, (elapsed.get(r) ?? 0) + res.elapsedMs);
      }
    }

    const summaries = ROUTES.map((r) => {
      const samples = latencies.get(r) ?? [];
      return { route: r, s: summarize(samples), rps: (samples.length / (elapsed.get(r) ?? 1)) * 1000 };
    });
    const bare = summaries[0]?.s.p50 ?? Number.NaN;
    const [load1 = 0] = loadavg();
    const cpus = availableParallelism();
    console.log(
      `\n${CONCURRENCY} concurrent keep-alive clients, ${ROUNDS} rounds, ${WARMUP} warm-up requests per route; ` +
        `${cpus} CPUs, load average ${fmt(load1, 1)}${load1 > cpus ? " (busy machine: latencies are inflated)" : ""}\n`,
    );
    console.log(
      formatTable(
        ["route", "requests", "p50 ms", "p99 ms", "req/s", "p50 vs bare"],
        summaries.map(({ route, s, rps }) => [
          route.label,
          String(s.count),
          fmt(s.p50),
          fmt(s.p99),
          fmt(rps, 0),
          `${fmt(s.p50 / bare)}x`,
        ]),
      ),
    );

    for (const { route, s } of summaries.filter((x) => x.route.authenticated)) {
      v.ratio({
        figure: `${route.label} p50 vs GET /health`,
        ours: s.p50,
        floor: bare,
        target: TARGET_RATIO,
        unit: "ms",
      });
    }
    console.log(`total ${fmt((performance.now() - t0) / 1000, 1)} s`);
    v.finish();
  } finally {
    agent.destroy();
    await worker.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
