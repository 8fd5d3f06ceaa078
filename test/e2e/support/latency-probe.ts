import { type ChildProcess, spawn } from "node:child_process";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { edgeHeaders } from "../../support/edge";

/**
 * A visitor of a pod measured from its own process: sequential GETs through the ingress (keep-alive,
 * a Host header), each answer's status and round trip printed as `<end epoch ms> <status> <ms>`. Its
 * own process, so that a test that loads the API from its event loop meanwhile does not delay the
 * visitor's callbacks and count that as the pod's latency. With `edgeSecret` the GETs go straight to
 * a host's ingress, signed as the edge signs them (test/support/edge.ts): what the host's own nginx
 * does, without the Worker's hop (which shares these cores with the API load) in the figure.
 */

export interface LatencyProbe {
  /** round trips (ms) of the answers that ended between `from` and `to` (epoch ms); throws on a non-200 */
  between(from: number, to: number): number[];
  stop(): Promise<void>;
}

export async function startLatencyProbe(
  port: number,
  host: string,
  edgeSecret?: string,
): Promise<LatencyProbe> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url)], {
    env: { ...process.env, PROBE_PORT: String(port), PROBE_HOST: host, PROBE_EDGE_SECRET: edgeSecret ?? "" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const samples: { at: number; status: number; ms: number }[] = [];
  let rest = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      const [at, status, ms] = line.split(" ").map(Number);
      if (at !== undefined && status !== undefined && ms !== undefined) samples.push({ at, status, ms });
    }
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // the first answer: the probe is up
  for (let i = 0; i < 200 && samples.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  if (samples.length === 0) throw new Error(`latency probe: no answer from ${host}`);
  return {
    between(from, to) {
      const window = samples.filter((s) => s.at >= from && s.at <= to);
      const bad = window.find((s) => s.status !== 200);
      if (bad) throw new Error(`latency probe: ${host} answered ${bad.status}`);
      return window.map((s) => s.ms);
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The ceil(q·n)-th smallest of `ms` (p99: q = 0.99). */
export const percentile = (ms: number[], q: number) =>
  [...ms].sort((a, b) => a - b)[Math.max(0, Math.ceil(ms.length * q) - 1)] ?? Number.NaN;

/** The child: GET until killed. */
async function probe(port: number, host: string, edgeSecret: string): Promise<never> {
  for (;;) {
    const t0 = performance.now();
    const headers = { host, ...(edgeSecret ? edgeHeaders(edgeSecret, { host, path: "/" }) : {}) };
    const status = await new Promise<number>((resolve) => {
      const req = request({ host: "127.0.0.1", port, path: "/", headers, timeout: 10_000 }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("timeout", () => req.destroy(new Error("timeout")));
      // an idle keep-alive connection an old nginx worker closed at a reload is the client's race
      // (sent again, as browsers do); any other error is an answer the pod did not give
      req.on("error", () => resolve(req.reusedSocket ? -1 : 0));
      req.end();
    });
    if (status === -1) continue;
    process.stdout.write(`${Date.now()} ${status} ${(performance.now() - t0).toFixed(3)}\n`);
  }
}

if (process.env.PROBE_PORT && process.argv[1] === fileURLToPath(import.meta.url)) {
  await probe(
    Number(process.env.PROBE_PORT),
    process.env.PROBE_HOST ?? "",
    process.env.PROBE_EDGE_SECRET ?? "",
  );
}
