import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A double of Cloudflare's API v4 for the Worker's CLOUDFLARE_API_BASE: the custom hostnames of
 * Cloudflare for SaaS, as the Worker calls them (worker/services/domains/cloudflare.ts).
 *
 * - `POST /zones/{zone}/custom_hostnames` `{hostname, ssl: {method, type}}` → 200 with the new
 *   custom hostname (`status: "pending"`, `ssl.status: "pending_validation"`, its HTTP validation
 *   record and ownership TXT record); a host name the zone has already is 409 with Cloudflare's
 *   error 1406 "Duplicate custom hostname found."
 * - `GET /zones/{zone}/custom_hostnames?hostname=` → the list (`result_info` with it);
 *   `GET /zones/{zone}/custom_hostnames/{id}` → one, or 404 with error 1436.
 * - `PATCH /zones/{zone}/custom_hostnames/{id}` `{ssl: {method, type}}` → the hostname, its
 *   validation restarted (`status: "pending"`, `ssl.status: "pending_validation"`, errors cleared);
 *   404 with error 1436 when it has none.
 * - `DELETE /zones/{zone}/custom_hostnames/{id}` → `{id}`; 404 with error 1436 when it has none.
 *
 * Every answer is Cloudflare's envelope `{success, errors: [{code, message}], messages, result}`.
 * A request without `Authorization: Bearer <CLOUDFLARE_DOUBLE_TOKEN>` is 403 (error 10000), one
 * for another zone than CLOUDFLARE_DOUBLE_ZONE 404 (error 1003).
 *
 * Tests in workerd cannot share its memory, so a control surface under `/__double/` plays
 * Cloudflare's side: `POST /__double/state/<hostname>` `{status, ssl_status, validation_errors,
 * verification_errors}` moves a hostname's validation on (to `active`, or to a failure);
 * `POST /__double/fail/<hostname>` makes every call about that host name answer 500 (`DELETE` to
 * stop); `GET /__double/hostnames` lists the zone's custom hostnames, each with `restarts`, the
 * PATCHes it got.
 */

export const CLOUDFLARE_DOUBLE_TOKEN = "cf-double-test-token";
export const CLOUDFLARE_DOUBLE_ZONE = "023e105f4ecef8ad9ca31a8372d0c353";

export interface CloudflareDouble {
  url: string;
  close(): Promise<void>;
}

interface Hostname {
  id: string;
  hostname: string;
  status: string;
  verification_errors?: string[];
  ssl: {
    id: string;
    type: "dv";
    method: string;
    status: string;
    validation_records: { http_url: string; http_body: string }[];
    validation_errors?: { message: string }[];
  };
  ownership_verification: { type: "txt"; name: string; value: string };
  created_at: string;
}

const envelope = (result: unknown, extra: Record<string, unknown> = {}) => ({
  success: true,
  errors: [],
  messages: [],
  result,
  ...extra,
});
const error = (code: number, message: string) => ({
  success: false,
  errors: [{ code, message }],
  messages: [],
  result: null,
});

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if (text === "") return {};
  const parsed: unknown = JSON.parse(text);
  return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
}

export async function startCloudflareDouble(): Promise<CloudflareDouble> {
  const byId = new Map<string, Hostname>();
  const failing = new Set<string>();
  /** PATCHes (validation restarts) per hostname id, listed with the hostnames */
  const patches = new Map<string, number>();
  const byName = (name: string) => [...byId.values()].find((h) => h.hostname === name);

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  async function control(req: IncomingMessage, res: ServerResponse, path: string) {
    if (path === "hostnames")
      return send(
        res,
        200,
        [...byId.values()].map((h) => ({ ...h, restarts: patches.get(h.id) ?? 0 })),
      );
    const m = path.match(/^(state|fail)\/(.+)$/);
    if (!m) return send(res, 404, { error: "no such control" });
    const name = decodeURIComponent(m[2] ?? "").toLowerCase();
    if (m[1] === "fail") {
      if (req.method === "DELETE") failing.delete(name);
      else failing.add(name);
      return send(res, 200, { ok: true });
    }
    const h = byName(name);
    if (!h) return send(res, 404, { error: `no custom hostname ${name}` });
    const body = await readJson(req);
    if (typeof body.status === "string") h.status = body.status;
    if (typeof body.ssl_status === "string") h.ssl.status = body.ssl_status;
    if (Array.isArray(body.validation_errors))
      h.ssl.validation_errors = body.validation_errors.map((message) => ({ message: String(message) }));
    if (Array.isArray(body.verification_errors)) h.verification_errors = body.verification_errors.map(String);
    return send(res, 200, h);
  }

  const server: Server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://double");
      if (url.pathname.startsWith("/__double/"))
        return await control(req, res, url.pathname.slice("/__double/".length));
      const m = url.pathname.match(/^\/zones\/([^/]+)\/custom_hostnames(?:\/([^/]+))?$/);
      if (!m) return send(res, 404, error(7003, `Could not route to ${url.pathname}`));
      if (req.headers.authorization !== `Bearer ${CLOUDFLARE_DOUBLE_TOKEN}`)
        return send(res, 403, error(10000, "Authentication error"));
      if (m[1] !== CLOUDFLARE_DOUBLE_ZONE) return send(res, 404, error(1003, "Invalid or missing zone id."));
      const id = m[2] ? decodeURIComponent(m[2]) : undefined;
      const target = id ? byId.get(id)?.hostname : (url.searchParams.get("hostname") ?? undefined);
      if (target && failing.has(target)) return send(res, 500, error(1000, "Internal server error"));

      if (!id && req.method === "POST") {
        const body = await readJson(req);
        const hostname = typeof body.hostname === "string" ? body.hostname.toLowerCase() : "";
        const ssl = (body.ssl ?? {}) as { method?: unknown; type?: unknown };
        if (!hostname) return send(res, 400, error(1409, "Hostname is missing."));
        if (failing.has(hostname)) return send(res, 500, error(1000, "Internal server error"));
        if (ssl.method !== "http" && ssl.method !== "txt" && ssl.method !== "email")
          return send(res, 400, error(1413, "SSL validation method is invalid."));
        if (byName(hostname)) return send(res, 409, error(1406, "Duplicate custom hostname found."));
        const h: Hostname = {
          id: randomUUID(),
          hostname,
          status: "pending",
          ssl: {
            id: randomUUID(),
            type: "dv",
            method: ssl.method,
            status: "pending_validation",
            validation_records: [
              {
                http_url: `http://${hostname}/.well-known/pki-validation/${randomUUID()}.txt`,
                http_body: randomUUID(),
              },
            ],
          },
          ownership_verification: {
            type: "txt",
            name: `_cf-custom-hostname.${hostname}`,
            value: randomUUID(),
          },
          created_at: new Date().toISOString(),
        };
        byId.set(h.id, h);
        return send(res, 200, envelope(h));
      }
      if (!id && req.method === "GET") {
        const all = [...byId.values()].filter((h) => !target || h.hostname === target);
        return send(
          res,
          200,
          envelope(all, {
            result_info: { page: 1, per_page: 20, count: all.length, total_count: all.length },
          }),
        );
      }
      if (id && req.method === "PATCH") {
        // the same ssl settings again: Cloudflare validates the hostname and its certificate anew
        const h = byId.get(id);
        if (!h) return send(res, 404, error(1436, "The custom hostname was not found."));
        const ssl = ((await readJson(req)).ssl ?? {}) as { method?: unknown; type?: unknown };
        if (ssl.method !== "http" && ssl.method !== "txt" && ssl.method !== "email")
          return send(res, 400, error(1413, "SSL validation method is invalid."));
        h.status = "pending";
        h.ssl.method = ssl.method;
        h.ssl.status = "pending_validation";
        delete h.ssl.validation_errors;
        delete h.verification_errors;
        patches.set(id, (patches.get(id) ?? 0) + 1);
        return send(res, 200, envelope(h));
      }
      if (id && (req.method === "GET" || req.method === "DELETE")) {
        const h = byId.get(id);
        if (!h) return send(res, 404, error(1436, "The custom hostname was not found."));
        if (req.method === "GET") return send(res, 200, envelope(h));
        byId.delete(id);
        return send(res, 200, envelope({ id }));
      }
      return send(res, 405, error(10405, "Method not allowed"));
    } catch (e) {
      return send(res, 400, error(1001, `bad request: ${String(e)}`));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
