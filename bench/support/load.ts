/**
 * A closed-loop HTTP load generator: `concurrency` clients, each sending its next request as soon as the
 * previous answer's body is read, over keep-alive connections (one per client). Uses node:http directly —
 * about a third of the client-side cost per request of the global fetch — so the client adds as little as
 * possible to what is measured, and the same for every route.
 */
import http from "node:http";

export interface LoadOptions {
  /** Absolute URL to request. */
  url: string;
  method?: string;
  /** The same for every request, or per request (its index): e.g. a different caller each time. */
  headers?: Record<string, string> | ((request: number) => Record<string, string>);
  body?: string;
  /** Total requests over all clients. */
  requests: number;
  concurrency: number;
  /** Status codes that count as success. Default: 200–299. */
  ok?: (status: number) => boolean;
  /** Reuse an agent between runs (keeps connections warm); one is created and destroyed otherwise. */
  agent?: http.Agent;
}

export interface LoadResult {
  /** Per-request latency in ms, from sending until the whole body was read, in completion order. */
  latencies: number[];
  /** Wall time of the whole run in ms. */
  elapsedMs: number;
  /** Completed requests per second over the run. */
  throughput: number;
  /** Requests whose status failed `ok`, with the first such status and body for the error message. */
  failures: number;
  firstFailure?: { status: number; body: string };
}

export const keepAliveAgent = (concurrency: number): http.Agent =>
  new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });

function once(
  agent: http.Agent,
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { requests, concurrency } = options;
  const url = new URL(options.url);
  const method = options.method ?? "GET";
  const headersOf = (request: number): Record<string, string> => {
    const headers = {
      ...(typeof options.headers === "function" ? options.headers(request) : options.headers),
    };
    if (options.body !== undefined) headers["content-length"] ??= String(Buffer.byteLength(options.body));
    return headers;
  };
  const ok = options.ok ?? ((s: number) => s >= 200 && s < 300);
  const agent = options.agent ?? keepAliveAgent(concurrency);

  const latencies: number[] = [];
  let failures = 0;
  let firstFailure: LoadResult["firstFailure"];
  let issued = 0;

  const client = async () => {
    while (issued < requests) {
      const headers = headersOf(issued++);
      const t = performance.now();
      const res = await once(agent, url, method, headers, options.body);
      latencies.push(performance.now() - t);
      if (!ok(res.status)) {
        failures++;
        firstFailure ??= res;
      }
    }
  };

  const start = performance.now();
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, client));
  } finally {
    if (!options.agent) agent.destroy();
  }
  const elapsedMs = performance.now() - start;
  return {
    latencies,
    elapsedMs,
    throughput: (latencies.length / elapsedMs) * 1000,
    failures,
    firstFailure,
  };
}
