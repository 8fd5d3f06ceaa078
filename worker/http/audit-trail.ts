import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AuditEventRow } from "../db/schema";
import { type AuditAction, type AuditFacts, ROUTE_ACTIONS, type RouteAudit } from "../services/audit/actions";
import { auditRow, directAuditRow, recordAudit } from "../services/audit/record";
import type { Caller } from "../services/auth/caller";
import type { AppEnv } from "./app-env";

/**
 * The audit log's one choke point for the REST API (docs/audit.md). Every authenticated POST, PUT,
 * PATCH or DELETE whose route `ROUTE_ACTIONS` names is recorded after its handler has answered,
 * whatever the outcome (a refusal and a failure are changes attempted), with the caller, its
 * credential, the client's IP and what the route's entry extracts from the validated request. The
 * row is written in `waitUntil` (services/audit/record.ts): the request pays for building it, not
 * for the write. Handlers know nothing of it; the dashboard and the CLI call these same routes.
 */

const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** `METHOD /api/pods/:name` (Hono's spelling of the documented `{name}`) → the route's entry. */
const byRoutePath = new Map<string, RouteAudit>(
  Object.entries(ROUTE_ACTIONS).map(([key, entry]) => [key.replaceAll(/\{(\w+)\}/g, ":$1"), entry]),
);

function entryOf(c: Context<AppEnv>): RouteAudit | undefined {
  const method = c.req.method;
  for (const route of matchedRoutes(c)) {
    if (route.method !== method) continue;
    const entry = byRoutePath.get(`${method} ${route.path}`);
    if (entry) return entry;
  }
  return undefined;
}

const validated = (c: Context<AppEnv>, target: "json" | "query") => {
  const value = (c.req as unknown as { valid(t: string): unknown }).valid(target);
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
};

export const clientIp = (c: Context<AppEnv>) => c.req.header("cf-connecting-ip") ?? undefined;

export const auditTrail: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (!UNSAFE_METHODS.has(c.req.method)) return;
  const caller = c.get("caller") as Caller | undefined;
  if (!caller) return;
  const entry = entryOf(c);
  if (!entry) return;
  const status = c.res.status;
  const response =
    entry.readsResponse && status < 400
      ? ((await c.res
          .clone()
          .json()
          .catch(() => undefined)) as Record<string, unknown> | undefined)
      : undefined;
  const facts: AuditFacts = {
    param: (name) => c.req.param(name),
    body: validated(c, "json"),
    query: validated(c, "query"),
    response,
  };
  const row: AuditEventRow | null = auditRow(entry, facts, {
    caller,
    ip: clientIp(c),
    teamId: caller.teamId,
    status,
  });
  if (row) c.executionCtx.waitUntil(recordAudit(c.get("db"), caller, [row]));
};

/**
 * A change made outside the REST routes' table by a signed-in caller the route resolved itself (the
 * OAuth consent and device pages grant a connector with the browser's session): recorded the same way.
 */
export function auditDirectly(
  c: Context<AppEnv>,
  caller: Caller,
  action: AuditAction,
  status: number,
  target?: string,
): void {
  const row = directAuditRow(action, { caller, ip: clientIp(c), teamId: caller.teamId, status }, target);
  if (row) c.executionCtx.waitUntil(recordAudit(c.get("db"), caller, [row]));
}
