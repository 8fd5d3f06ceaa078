import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A double of the git host's REST API (GitHub's wire format: JSON over HTTP), for the Worker's
 * GITHUB_API_BASE. It serves what the service calls: `POST/DELETE /repos/{owner}/{repo}/hooks`
 * and `POST /repos/{owner}/{repo}/statuses/{sha}`, checks the bearer token, and records every
 * request so tests can assert on them; `GET /__double/requests` returns the record (tests in
 * workerd cannot share memory with it). `owner` "locked" answers 403 (a token without the hook
 * scope). Used by the workerd tests (started by test/worker/global-setup.ts) and e2e tests alike.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | null;
  body: unknown;
  at: number;
}

export interface RepohostDouble {
  url: string;
  requests: RecordedRequest[];
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

export async function startRepohostDouble(port = 0): Promise<RepohostDouble> {
  const requests: RecordedRequest[] = [];
  let nextHook = 1000;
  const hooks = new Map<string, { repo: string; config: unknown }>();

  const reply = (res: ServerResponse, status: number, body?: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(body === undefined ? "" : JSON.stringify(body));
  };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://double");
    const text = await readBody(req);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    if (url.pathname === "/__double/requests") return reply(res, 200, requests);
    requests.push({
      method: req.method ?? "GET",
      path: url.pathname,
      authorization: req.headers.authorization ?? null,
      body,
      at: Date.now(),
    });
    if (!/^Bearer \S+$/.test(req.headers.authorization ?? ""))
      return reply(res, 401, { message: "Requires authentication" });
    const hook = /^\/repos\/([^/]+)\/([^/]+)\/hooks(?:\/(\d+))?$/.exec(url.pathname);
    const status = /^\/repos\/([^/]+)\/([^/]+)\/statuses\/([0-9a-f]{40})$/.exec(url.pathname);
    if (hook?.[1] === "locked")
      return reply(res, 403, { message: "Resource not accessible by personal access token" });
    if (hook && req.method === "POST" && !hook[3]) {
      const id = nextHook++;
      hooks.set(String(id), {
        repo: `${hook[1]}/${hook[2]}`,
        config: (body as { config?: unknown })?.config,
      });
      return reply(res, 201, { id, type: "Repository", name: "web", active: true, events: ["push"] });
    }
    if (hook && req.method === "DELETE" && hook[3]) {
      if (!hooks.delete(hook[3])) return reply(res, 404, { message: "Not Found" });
      res.writeHead(204);
      return res.end();
    }
    if (status && req.method === "POST") {
      return reply(res, 201, {
        id: requests.length,
        state: (body as { state?: string })?.state,
        context: "podhost/deploy",
      });
    }
    return reply(res, 404, { message: "Not Found" });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
