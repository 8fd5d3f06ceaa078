import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env";
import { sessionCookie } from "../http/session-cookie";
import { resolveCredential } from "../services/auth/credentials";

/**
 * Pages behind sign-in. The dashboard is a browser's, so its only credential is the session cookie
 * (session-cookie.ts decides which one a browser may use); an Authorization header is ignored here.
 * Signed out, a page sends the browser to the sign-in page with where it was going in `next`.
 */
export const requireSignedIn: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = sessionCookie(c);
  const resolved = token ? await resolveCredential(c.get("db"), c.env, token) : null;
  if (resolved?.caller.via !== "session") {
    const url = new URL(c.req.url);
    return c.redirect(`/app/sign-in?next=${encodeURIComponent(url.pathname + url.search)}`, 302);
  }
  c.set("caller", resolved.caller);
  if (resolved.afterResponse) c.executionCtx.waitUntil(resolved.afterResponse);
  return next();
};

/** The caller when signed in, for pages that differ signed in and out (sign-in, an invitation). */
export async function signedInCaller(c: Context<AppEnv>) {
  const token = sessionCookie(c);
  const resolved = token ? await resolveCredential(c.get("db"), c.env, token) : null;
  return resolved?.caller.via === "session" ? resolved.caller : undefined;
}

/**
 * Where to go after signing in: `next` when it is a dashboard path, else the pods list. Never an
 * absolute or protocol-relative URL: the sign-in page must not become an open redirect.
 */
export function safeNext(next: string | undefined): string {
  const dashboardPath = next === "/app" || next?.startsWith("/app/") || next?.startsWith("/app?");
  return dashboardPath && next && !next.includes("\\") ? next : "/app";
}
