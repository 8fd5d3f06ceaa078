import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 that the test owns, placed between the agent and the Worker (the agent's
 * PODHOST_API_URL points at it). It forwards bytes both ways, the control WebSocket and the agent's
 * HTTP calls alike. While it flaps, it cuts every open connection at random intervals (a reset on the
 * agent's side, a close on the Worker's), as a flaky network would. `calm()` stops the cuts.
 */
export interface FlappingProxy {
  port: number;
  url: string;
  /** how many times every open connection was cut */
  readonly cuts: number;
  /** how many connections were cut in all */
  readonly connectionsCut: number;
  /** how many connections the agent opened through the proxy */
  readonly connections: number;
  /** start cutting every connection every `minMs`–`maxMs` (random) */
  flap(minMs: number, maxMs: number): void;
  /** stop cutting (open connections stay) */
  calm(): void;
  close(): Promise<void>;
}

export async function startFlappingProxy(upstream: { host: string; port: number }): Promise<FlappingProxy> {
  const open = new Set<{ client: Socket; server: Socket }>();
  let cuts = 0;
  let connectionsCut = 0;
  let connections = 0;
  let timer: NodeJS.Timeout | undefined;

  const server: Server = createServer((client) => {
    connections++;
    const upstreamSocket = createConnection(upstream);
    const pair = { client, server: upstreamSocket };
    open.add(pair);
    const end = () => {
      open.delete(pair);
      client.destroy();
      upstreamSocket.destroy();
    };
    client.on("error", end);
    upstreamSocket.on("error", end);
    client.on("close", end);
    upstreamSocket.on("close", end);
    client.pipe(upstreamSocket);
    upstreamSocket.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  const cutAll = () => {
    cuts++;
    for (const pair of [...open]) {
      connectionsCut++;
      open.delete(pair);
      pair.client.resetAndDestroy();
      pair.server.destroy();
    }
  };

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    get cuts() {
      return cuts;
    },
    get connectionsCut() {
      return connectionsCut;
    },
    get connections() {
      return connections;
    },
    flap(minMs, maxMs) {
      clearTimeout(timer);
      const next = () => {
        timer = setTimeout(
          () => {
            cutAll();
            next();
          },
          minMs + Math.random() * (maxMs - minMs),
        );
      };
      next();
    },
    calm() {
      clearTimeout(timer);
      timer = undefined;
    },
    async close() {
      clearTimeout(timer);
      for (const pair of open) {
        pair.client.destroy();
        pair.server.destroy();
      }
      open.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
