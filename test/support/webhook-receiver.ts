import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A receiver of outgoing webhooks (alerts: docs/alerts.md) on 127.0.0.1: every POST to any path is
 * kept with its headers and body. Tests in workerd cannot share its memory, so it has a small
 * control surface under `/__double/`: `GET /__double/received?path=/x` lists what reached `/x`, and
 * `POST /__double/respond` `{path, status, times}` makes the next `times` requests to `path` answer
 * `status` (then 200 again). A path is a test's own (a random one), so parallel files never mix.
 */

export interface Received {
  method: string;
  headers: Record<string, string>;
  body: string;
  answered: number;
  /** when it arrived, ms since the epoch (the alerts e2e test measures delivery times with it) */
  at: number;
}

export interface WebhookReceiver {
  url: string;
  /** what reached `path` so far, in order (the same list `GET /__double/received` answers) */
  received(path: string): Received[];
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      text += chunk;
    });
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, Received[]>();
  const scripted = new Map<string, { status: number; times: number }>();
  const server = createServer(async (req, res) => {
    const at = Date.now();
    const url = new URL(req.url ?? "/", "http://receiver");
    const body = await readBody(req);
    if (url.pathname === "/__double/received") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ data: received.get(url.searchParams.get("path") ?? "") ?? [] }));
      return;
    }
    if (url.pathname === "/__double/respond" && req.method === "POST") {
      const { path, status, times } = JSON.parse(body) as { path: string; status: number; times: number };
      scripted.set(path, { status, times });
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
      return;
    }
    let status = 200;
    const script = scripted.get(url.pathname);
    if (script && script.times > 0) {
      status = script.status;
      scripted.set(url.pathname, { ...script, times: script.times - 1 });
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
    const list = received.get(url.pathname) ?? [];
    list.push({ method: req.method ?? "", headers, body, answered: status, at });
    received.set(url.pathname, list);
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(status === 200 ? "ok" : "no");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: (path) => [...(received.get(path) ?? [])],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
