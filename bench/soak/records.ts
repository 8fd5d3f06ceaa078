/**
 * What bench/soak records as it runs: per kind of operation its outcomes and times, every 5xx and
 * every request without an answer, every failure; the tenants' recording API client; and the rules an
 * answer is judged by (refused, not ended, failed).
 */

import { sleep } from "../../test/e2e/support/stack";
import { now, POLL_MS } from "./settings";

export type Kind =
  | "file write"
  | "exec"
  | "env"
  | "deploy"
  | "backup"
  | "restore"
  | "service install"
  | "service remove"
  | "create"
  | "delete";
export const KINDS: Kind[] = [
  "file write",
  "exec",
  "env",
  "deploy",
  "backup",
  "restore",
  "service install",
  "service remove",
  "create",
  "delete",
];

export interface KindStats {
  ok: number;
  failed: number;
  notEnded: number;
  refused429: number;
  ms: number[];
}
export const stats = new Map<Kind, KindStats>(
  KINDS.map((k) => [k, { ok: 0, failed: 0, notEnded: 0, refused429: 0, ms: [] }]),
);
export interface ServerError {
  atS: number;
  method: string;
  path: string;
  status: number;
  body: string;
  hostAway: boolean;
}
export const serverErrors: ServerError[] = [];
export const failures: { atS: number; tenant: number; kind: Kind; reason: string }[] = [];
export const notEnded: { tenant: number; kind: Kind; what: string }[] = [];
/** When the soak's clock started (set again once the tenants are set up) and the requests since. */
export const progress = { t0: now(), requests: 0 };
export const atS = () => (now() - progress.t0) / 1000;

/** documented 503s while a host is away (docs/pods.md) */
const HOST_AWAY = /is unavailable: its agent is not connected|is offline; try again shortly/;

export type Reply = { status: number; body: any };
export type Api = ReturnType<typeof recordedClient>;

/** The tenant's API client, every 5xx (and every request without an answer) recorded with its body. */
/**
 * A tenant's JSON request on a connection of its own (`Connection: close`, as curl makes them). The
 * local workerd closes idle keep-alive connections, and a pooled connection reused at that moment
 * fails with "other side closed" before the Worker sees the request (in trial runs 3–9% of
 * requests; the Worker's request log had no line for them): the race of the test client with the
 * local runtime, not the product's. The agent's own calls to the control plane keep their
 * keep-alive and are counted as they come.
 */
async function request(
  base: string,
  token: string,
  ip: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<Reply> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    connection: "close",
    // each tenant its own client address, as separate users have (the per-IP limits, e.g. creates)
    "cf-connecting-ip": ip,
  };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${p}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  } catch {
    return { status: res.status, body: text };
  }
}

export function recordedClient(base: string, token: string, ip: string) {
  const client = {
    get: (p: string) => request(base, token, ip, "GET", p),
    post: (p: string, body?: unknown) => request(base, token, ip, "POST", p, body),
    put: (p: string, body?: unknown) => request(base, token, ip, "PUT", p, body),
    delete: (p: string, body?: unknown) => request(base, token, ip, "DELETE", p, body),
  };
  const call = async (
    method: "get" | "post" | "put" | "delete",
    p: string,
    body?: unknown,
  ): Promise<Reply> => {
    progress.requests++;
    let res: Reply;
    try {
      res = method === "get" ? await client.get(p) : await client[method](p, body);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const text = `${String(error)}${cause ? ` (${cause.code ?? ""} ${cause.message ?? ""})` : ""}`;
      serverErrors.push({
        atS: atS(),
        method: method.toUpperCase(),
        path: p,
        status: 0,
        body: text,
        hostAway: false,
      });
      return { status: 0, body: { error: text } };
    }
    if (res.status >= 500) {
      const text = typeof res.body === "string" ? res.body : JSON.stringify(res.body);
      serverErrors.push({
        atS: atS(),
        method: method.toUpperCase(),
        path: p,
        status: res.status,
        body: text.slice(0, 500),
        hostAway: res.status === 503 && HOST_AWAY.test(text.slice(0, 2000)),
      });
    }
    return res;
  };
  return {
    get: (p: string) => call("get", p),
    post: (p: string, body?: unknown) => call("post", p, body ?? {}),
    put: (p: string, body?: unknown) => call("put", p, body ?? {}),
    delete: (p: string, body?: unknown) => call("delete", p, body),
  };
}

/** An operation refused with 429, still running at its limit, or ended in error. */
export class Refused extends Error {}
export class NotEnded extends Error {}
export class Failed extends Error {}

const errorOf = (r: Reply) =>
  `${r.status} ${typeof r.body === "string" ? r.body.slice(0, 300) : JSON.stringify(r.body).slice(0, 300)}`;

/** The answer must have one of `statuses`; a 429 is a refusal, anything else a failure. */
export function expectStatus(r: Reply, what: string, ...statuses: number[]): Reply {
  if (statuses.includes(r.status)) return r;
  if (r.status === 429) throw new Refused(`${what}: ${errorOf(r)}`);
  throw new Failed(`${what}: ${errorOf(r)}`);
}

/**
 * A poll's answer, or undefined to poll again when the request got no answer or a 5xx (recorded as
 * such by the client): a status read is not the operation, which may still end well.
 */
export const polled = (r: Reply, what: string): Reply | undefined =>
  r.status === 0 || r.status >= 500 ? undefined : expectStatus(r, what, 200);

/** Polls `check` every POLL_MS until it answers a value; NotEnded after `limitMs` from `since`. */
export async function until<T>(
  what: string,
  since: number,
  limitMs: number,
  check: () => Promise<T | undefined>,
) {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (now() - since > limitMs) throw new NotEnded(`${what}: not ended after ${limitMs / 1000} s`);
    await sleep(POLL_MS);
  }
}
