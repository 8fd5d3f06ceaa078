import type { MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { randomToken } from "../../shared/ids";
import { createDb } from "../db/client";
import { forgetCachedReads } from "../lib/isolate-cache";
import { resolveCredential } from "../services/auth/credentials";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

export const SESSION_COOKIE = "pod_session";

/** Request id (from Cloudflare's ray id when present), a D1 handle, and one structured log line per request. */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const requestId = c.req.header("cf-ray") ?? `req_${randomToken(16)}`;
  c.set("requestId", requestId);
  c.set("db", createDb(c.env.DB));
  const started = Date.now();
  await next();
  // Any successful change may revoke or alter a credential or a membership (logout, revocation,
  // team switch …): this isolate's cached reads are dropped rather than tracked change by change.
  if (c.req.method !== "GET" && c.res.status < 400) forgetCachedReads();
  c.header("X-Request-Id", requestId);
  console.log(
    JSON.stringify({
      requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Date.now() - started,
    }),
  );
};

function credentialOf(c: Parameters<MiddlewareHandler<AppEnv>>[0]): string | undefined {
  const header = c.req.header("authorization");
  if (header) {
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    return match?.[1];
  }
  return getCookie(c, SESSION_COOKIE);
}

async function authenticate(c: Parameters<MiddlewareHandler<AppEnv>>[0]): Promise<boolean> {
  const credential = credentialOf(c);
  if (!credential) return false;
  const resolved = await resolveCredential(c.get("db"), credential);
  if (!resolved) return false;
  c.set("caller", resolved.caller);
  // Best effort (the last_used_at touch): lost if cancelled, which waitUntil may do 30 s on.
  if (resolved.afterResponse) c.executionCtx.waitUntil(resolved.afterResponse);
  return true;
}

/** Session cookie, bearer session, `ipk_` API token or connector session; 401 otherwise. */
export const requireAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!(await authenticate(c))) {
    throw new ApiError("unauthorized", "authentication required: send a session cookie or a Bearer token");
  }
  await next();
};

/** For routes that behave differently signed in and signed out (accepting an invitation). */
export const optionalAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  await authenticate(c);
  await next();
};
