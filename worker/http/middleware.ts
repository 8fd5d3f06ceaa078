import type { MiddlewareHandler } from "hono";
import { randomToken } from "../../shared/ids";
import { createDb } from "../db/client";
import { forgetCachedReads } from "../lib/isolate-cache";
import type { Caller } from "../services/auth/caller";
import { resolveCredential } from "../services/auth/credentials";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";
import { sessionCookie } from "./session-cookie";

/**
 * Path segments that are credentials: `GET /api/invitations/{token}` carries the invitation token in
 * its path, and a log line (Workers Logs, tail, Logpush) is readable by more people than the team it
 * admits to. The log keeps the route's shape, not the secret. (Query strings are not logged at all.)
 */
const SECRET_PATHS: RegExp[] = [
  /^(\/api\/invitations\/)(?!accept$)[^/]+$/,
  // the dashboard's page of an invitation (the mail links there)
  /^(\/app\/invitations\/)[^/]+$/,
  // a pod's feedback token (docs/feedback.md): `POST /api/feedback/{token}` and its `/mine`
  /^(\/api\/feedback\/)[^/]+(?=\/mine$|$)/,
];

export const loggedPath = (path: string) =>
  SECRET_PATHS.reduce((p, pattern) => p.replace(pattern, "$1[redacted]"), path);

/** Request id (from Cloudflare's ray id when present), a D1 handle, and one structured log line per request. */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const requestId = c.req.header("cf-ray") ?? `req_${randomToken(16)}`;
  c.set("requestId", requestId);
  c.set("db", createDb(c.env.DB));
  const started = Date.now();
  await next();
  // Any successful change may revoke or alter a credential or a membership (logout, revocation,
  // team switch …): this isolate's cached reads are dropped rather than tracked change by change,
  // unless the route said it changes none of them (keepsCachedReads).
  if (c.req.method !== "GET" && c.res.status < 400 && !c.get("keepsCachedReads")) forgetCachedReads();
  c.header("X-Request-Id", requestId);
  console.log(
    JSON.stringify({
      requestId,
      method: c.req.method,
      path: loggedPath(c.req.path),
      status: c.res.status,
      ms: Date.now() - started,
    }),
  );
};

type Ctx = Parameters<MiddlewareHandler<AppEnv>>[0];

/**
 * For a change that works inside a pod and touches no credential, membership, team or host row (the
 * command runner): its success keeps this isolate's cached reads, so the next request of the same
 * caller (a script running commands one after another) is not a D1 round trip for its credential.
 * Only for routes whose every success is such a change: when in doubt, leave it off.
 */
export const keepsCachedReads: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("keepsCachedReads", true);
  await next();
};

/** The Authorization header's bearer token when the header is there, else the session cookie (session-cookie.ts). */
function credentialOf(c: Ctx): { value: string; via: "header" | "cookie" } | undefined {
  const header = c.req.header("authorization");
  if (header) {
    const value = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    return value ? { value, via: "header" } : undefined;
  }
  const value = sessionCookie(c);
  return value ? { value, via: "cookie" } : undefined;
}

const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Cross-site request forgery. The browser attaches `pod_session` to any request for the API's host,
 * whoever's page sends it. `SameSite=Lax` keeps it off cross-site POSTs, but "site" is the
 * registrable domain: pods are served under sibling host names, so a tenant's page on
 * `evil.<pod domain>` is same-site with the API when the pod domain is a subdomain of the API's,
 * and a plain HTML form there could POST an upload into a victim's pod with the victim's cookie.
 *
 * So a change (POST, PUT, PATCH, DELETE) carried by the cookie must come from the API's own origin
 * (PUBLIC_URL's): the browser's `Origin` says where the request was made; without it (older
 * browsers send none on same-origin POSTs), `Sec-Fetch-Site` must be `same-origin`. A request with
 * neither is no browser's (curl, scripts holding the cookie) and is let through, as is anything
 * authenticated with the Authorization header, which a page of another origin cannot make a
 * browser send. Reads stay open: they change nothing, and the answer is not readable cross-origin.
 *
 * The answer is the reason, or null when the request may go on.
 */
export function crossSiteRefusal(c: Ctx): string | null {
  if (!UNSAFE_METHODS.has(c.req.method)) return null;
  const own = new URL(c.env.PUBLIC_URL).origin;
  const origin = c.req.header("origin");
  if (origin !== undefined) {
    if (origin === own) return null;
    return `cross-site request refused: a session cookie is accepted for ${c.req.method} only from ${own}, and this request comes from ${JSON.stringify(origin.slice(0, 200))} (use a Bearer token from other origins)`;
  }
  const site = c.req.header("sec-fetch-site");
  if (site === undefined || site === "same-origin") return null;
  return `cross-site request refused: a session cookie is accepted for ${c.req.method} only from ${own}, and the browser says this request is ${JSON.stringify(site.slice(0, 40))} (use a Bearer token from other origins)`;
}

async function authenticate(c: Ctx): Promise<boolean> {
  const credential = credentialOf(c);
  if (!credential) return false;
  if (credential.via === "cookie") {
    const refusal = crossSiteRefusal(c);
    if (refusal) throw new ApiError("forbidden", refusal);
  }
  const resolved = await resolveCredential(c.get("db"), c.env, credential.value);
  if (!resolved) return false;
  c.set("caller", resolved.caller);
  // Best effort (the last_used_at touch): lost if cancelled, which waitUntil may do 30 s on.
  if (resolved.afterResponse) c.executionCtx.waitUntil(resolved.afterResponse);
  return true;
}

/**
 * Session cookie, bearer session, `ipk_` API token or connector session; 401 otherwise, and 403
 * for a change carried by the cookie from another origin (crossSiteRefusal).
 */
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

/**
 * Every credential but the session is bound to one team: an `ipk_` API token to the team active when
 * it was made, a connector session (OAuth, docs/connectors.md) to the team of the consent. The
 * session — the browser's cookie, or the bearer token a login answers — is the account itself.
 */
export const isTeamBound = (caller: Caller) => caller.via !== "session";

const credentialName = (caller: Caller) =>
  caller.via === "connector" ? "a connector session" : "an API token";

/** The 403 a team-bound credential gets for something that is the account's, not its team's. */
export const teamBoundRefusal = (caller: Caller, what: string) =>
  new ApiError(
    "forbidden",
    `${credentialName(caller)} acts on its own team only: ${what} is the account's; sign in to do it`,
  );

/**
 * A team-bound credential acts on its one team: a route naming another team (`{id}`) is "not
 * found" for it, as for a team the caller is not in, even when the credential's user is a member
 * (or the owner). A leaked CI token, or an assistant granted one team, thus reaches nothing of the
 * user's other teams; listing the user's teams (no `{id}`) stays open to it. Goes after requireAuth.
 */
export const boundTeamOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const caller = c.get("caller");
  if (isTeamBound(caller) && c.req.param("id") !== caller.teamId) {
    throw new ApiError("not_found", "team not found");
  }
  await next();
};

/**
 * Account-wide routes: what they change or show reaches beyond one team (account SSH keys that
 * `auto_inject` into the pods of every team, the affiliate payout e-mail, the user's other tokens
 * and grants, new teams, the active team, cards on other teams). A team-bound credential gets 403
 * on them (docs/auth.md "What a team-bound credential may do" lists what stays open: reading its
 * own user, listing its teams, revoking itself). Goes after requireAuth.
 */
export function accountWide(what: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const caller = c.get("caller");
    if (isTeamBound(caller)) throw teamBoundRefusal(caller, what);
    await next();
  };
}
