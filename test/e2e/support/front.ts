import { createConnection, createServer, type Socket } from "node:net";

/**
 * A stack's stable address: a TCP forwarder on 127.0.0.1 that the test owns, in front of the
 * Worker's own workerd (LocalWorker.directUrl), which changes on every start. `retarget` points new
 * connections at a restarted Worker; open ones end with the process they were talking to, as
 * behind any load balancer.
 *
 * It replaces wrangler's dev ProxyWorker as the stacks' front. That proxy is a dev-only hop (a
 * Durable Object in a second workerd that queues every request and re-sends it to the Worker),
 * which no deployment has, and whose failures are known upstream: a pooled connection both ends
 * close at the same idle timeout turns into "Error inside ProxyWorker" (workers-sdk #14926, #15317).
 * Stacks behind it (every chaos file, which restarts the Worker) saw their requests hang for about
 * 5 minutes now and then, the agent's with the tests' (docs/reliability.md), while stacks that
 * talked to workerd directly never did. The cause was not pinned down; this front takes the
 * suspect hop away: a byte pipe has nothing to queue or to re-send.
 */
export interface Front {
  port: number;
  url: string;
  /** new connections wait (accepted, not yet forwarded) until the next `retarget`: a restart */
  pause(): void;
  /** new connections, and those waiting, go to `upstreamUrl` (http://127.0.0.1:<port>) */
  retarget(upstreamUrl: string): void;
  close(): Promise<void>;
}

export async function startFront(upstreamUrl: string, port = 0): Promise<Front> {
  let upstream = new URL(upstreamUrl);
  // while paused: the next upstream, for the connections that came meanwhile
  let resumed: { promise: Promise<URL>; resolve: (url: URL) => void } | undefined;
  const open = new Set<Socket>();
  const forward = (client: Socket, to: URL) => {
    if (client.destroyed) return;
    const target = createConnection({ host: to.hostname, port: Number(to.port), allowHalfOpen: true });
    open.add(client);
    open.add(target);
    // A reset on either side resets the other: the client sees what a dead server would give it.
    // A side that ends cleanly is ended on the other by pipe, after what it sent was written
    // (destroying on "close" would drop an answer's last bytes still queued for the client).
    const reset = () => {
      client.destroy();
      target.destroy();
    };
    client.on("error", reset).on("close", () => open.delete(client));
    target.on("error", reset).on("close", () => open.delete(target));
    client.pipe(target);
    target.pipe(client);
  };
  // half-open both ways: a side that is done sending still gets the other's answer (pipe ends each)
  const server = createServer({ allowHalfOpen: true }, (client) => {
    if (!resumed) return forward(client, upstream);
    // a client that gives up while the Worker restarts is simply dropped
    open.add(client);
    client.on("error", () => client.destroy()).on("close", () => open.delete(client));
    void resumed.promise.then((to) => forward(client, to));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const listening = typeof address === "object" && address ? address.port : port;
  return {
    port: listening,
    url: `http://127.0.0.1:${listening}`,
    pause() {
      if (resumed) return;
      let resolve: (url: URL) => void = () => undefined;
      const promise = new Promise<URL>((r) => {
        resolve = r;
      });
      resumed = { promise, resolve };
    },
    retarget(next) {
      upstream = new URL(next);
      resumed?.resolve(upstream);
      resumed = undefined;
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
