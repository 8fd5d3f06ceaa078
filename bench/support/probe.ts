import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

/** Status of GET / on ip:port on a fresh connection (like a first visitor); 0 when nothing answers. */
export function httpStatus(host: string, port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: "/", agent: false, timeout: 2_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(0));
  });
}

/** Polls `ok` every `intervalMs` (first try at once); the time it first held, or throws after the timeout. */
export async function until(
  what: string,
  ok: () => Promise<boolean>,
  intervalMs: number,
  timeoutMs = 60_000,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await ok()) return performance.now();
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
