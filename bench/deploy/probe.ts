/**
 * bench/deploy's probes: a pod's address (the ingress, with a Host header) or the floor's app asked
 * until it serves a commit, and watched during a deploy (every request counted, every failure noted).
 */
import { request } from "node:http";
import { TEST_EDGE_SECRET } from "../../test/agent/helpers";
import { edgeHeaders } from "../../test/support/edge";
import { now, POLL_MS, sleep } from "./settings";

/**
 * GET / on 127.0.0.1:port; status 0 when nothing answers. With a `host`, the port is the agent's
 * ingress, which lets in only requests the edge signed: the request carries the host's edge proof
 * (with the test agent's edge secret), as the Worker's edge would send it.
 */
export function get(port: number, host?: string): Promise<{ status: number; body: string }> {
  const headers = host ? { host, ...edgeHeaders(TEST_EDGE_SECRET, { host, path: "/" }) } : {};
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/", headers, agent: false, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on("error", () => resolve({ status: 0, body: "" }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ status: 0, body: "" }));
    req.end();
  });
}

/** Polls until the address answers 200 with a body starting with `want`; the time it first did. */
export async function untilServes(
  port: number,
  want: string,
  host?: string,
  timeoutMs = 120_000,
): Promise<number> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const r = await get(port, host);
    if (r.status === 200 && r.body.startsWith(want)) return now();
    if (now() > deadline) throw new Error(`timed out waiting for "${want}" on port ${port}`);
    await sleep(POLL_MS);
  }
}

/**
 * Requests the pod's address every POLL_MS until stopped: counts requests and failures, and notes
 * when a body starting with `want` was first seen.
 */
export function watch(port: number, host: string, want: string) {
  let stop = false;
  let count = 0;
  let firstNew: number | null = null;
  const failures: string[] = [];
  // what the address answered, each time it changed (the first word of the body: the version)
  const changes: string[] = [];
  let last = "";
  const t0 = now();
  const done = (async () => {
    while (!stop) {
      const sent = now();
      const r = await get(port, host);
      count++;
      if (r.status !== 200) failures.push(`+${Math.round(now() - t0)} ms: ${r.status || "no answer"}`);
      else if (firstNew === null && r.body.startsWith(want)) firstNew = now();
      const seen = `${r.status} ${r.body.split(/\s/)[0]?.slice(0, 20) ?? ""}`;
      if (seen !== last) changes.push(`+${((sent - t0) / 1000).toFixed(2)}s ${seen}`);
      last = seen;
      await sleep(POLL_MS);
    }
  })();
  return {
    async end() {
      stop = true;
      await done;
      return { count, failures, firstNew, changes };
    },
  };
}
