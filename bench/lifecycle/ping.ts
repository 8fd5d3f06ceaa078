/**
 * bench/lifecycle part 3: the no-op command round trip, `GET /agent/ping` (Worker → HostAgent DO →
 * agent over WebSocket → back), beside the same Worker's bare `GET /health` and its token check alone.
 */
import type { Stack } from "../../test/e2e/support/stack";
import { fmt, formatTable, summarize } from "../stats";
import { keepAliveAgent, runLoad } from "../support/load";

export interface PingResult {
  rows: { label: string; s: ReturnType<typeof summarize> }[];
  /** p50 of /agent/ping minus p50 of /health */
  added: number;
}

/**
 * /health, the host-token check alone (`/agent/connect` without an upgrade: auth, then 400) and
 * /agent/ping, sequential over one keep-alive connection, in interleaved rounds after a warm-up.
 */
export async function measurePing(stack: Stack, requests: number): Promise<PingResult> {
  const bearer = { authorization: `Bearer ${stack.agentEnv.PODHOST_AGENT_TOKEN}` };
  const routes = [
    { label: "GET /health (bare)", path: "/health", headers: {}, status: 200 },
    {
      label: "GET /agent/connect, no upgrade (token check)",
      path: "/agent/connect",
      headers: bearer,
      status: 400,
    },
    { label: "GET /agent/ping (+ DO → agent → back)", path: "/agent/ping", headers: bearer, status: 200 },
  ];
  const ROUNDS = 5;
  const agent = keepAliveAgent(1);
  try {
    const load = async (r: (typeof routes)[number], n: number) => {
      const url = `${stack.api}${r.path}`;
      const res = await runLoad({
        url,
        headers: r.headers,
        requests: n,
        concurrency: 1,
        agent,
        ok: (s) => s === r.status,
      });
      if (res.failures > 0)
        throw new Error(`${r.label}: ${res.failures} failed: ${JSON.stringify(res.firstFailure)}`);
      return res.latencies;
    };
    for (const r of routes) await load(r, 100);
    const samples = routes.map((): number[] => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < routes.length; i++) {
        const k = (i + round) % routes.length;
        const r = routes[k];
        if (r) samples[k]?.push(...(await load(r, Math.ceil(requests / ROUNDS))));
      }
    }
    const rows = routes.map((r, i) => ({ label: r.label, s: summarize(samples[i] ?? []) }));
    return { rows, added: (rows[2]?.s.p50 ?? Number.NaN) - (rows[0]?.s.p50 ?? Number.NaN) };
  } finally {
    agent.destroy();
  }
}

export function printPing({ rows }: PingResult) {
  const bare = rows[0]?.s.p50 ?? Number.NaN;
  const table = rows.map(({ label, s }) => [
    label,
    String(s.count),
    fmt(s.p50),
    fmt(s.p90),
    fmt(s.p99),
    fmt(s.p50 - bare),
  ]);
  console.log(formatTable(["route", "n", "p50 ms", "p90 ms", "p99 ms", "p50 added ms"], table));
}
