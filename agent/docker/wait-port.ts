import { connect } from "node:net";

const tryConnect = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });

/**
 * Resolves once something accepts TCP connections on `host:port` (the pod's web server is up), or
 * after `timeoutMs` with false: a pod whose own app does not come up is still running, and the
 * caller reports it as such rather than failing the command.
 */
export async function waitForPort(
  host: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const start = Date.now();
  const deadline = start + timeoutMs;
  while (Date.now() < deadline && !signal?.aborted) {
    if (await tryConnect(host, port)) return true;
    // A preset boots in tens of milliseconds: look often at first (a refused connect to the pod's
    // own bridge costs microseconds), then back off for apps that take their time.
    await new Promise((r) => setTimeout(r, Date.now() - start < 2_000 ? 5 : 50));
  }
  return false;
}
