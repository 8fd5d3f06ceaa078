import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { SESSION_TTL_MS } from "../services/auth/sessions";
import type { AppEnv } from "./app-env";

/**
 * The session cookie (docs/auth.md "The session cookie"). The spec names it `pod_session`, and its
 * clients keep sending that. Where the API is https, browsers get the same session a second time as
 * `__Host-pod_session`, and it is the one read from them.
 *
 * Why: a page on any host of the API's registrable domain (a pod, when pods are served under it) can
 * set a `pod_session` cookie for the whole domain, or for a longer path that the browser sends first
 * ("cookie tossing"): it could sign a visitor's browser in as the attacker, whose pods the visitor
 * then fills. A `__Host-` cookie can be set only by the API's own host, Secure, for `/`, without a
 * Domain: no sibling can set or shadow it. So a browser — a request carrying `Sec-Fetch-Site`, which
 * every current browser sends — is signed in by `__Host-pod_session` alone; a `pod_session` without
 * it in a browser is somebody else's and is ignored. Clients that are no browser (curl, scripts, the
 * spec's clients) send `pod_session`, which keeps working for them.
 */
export const SESSION_COOKIE = "pod_session";
export const HOST_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

type Ctx = Context<AppEnv>;

const baseOf = (c: Ctx) => new URL(c.env.PUBLIC_URL);
const isHttps = (c: Ctx) => baseOf(c).protocol === "https:";

/** The session token the request's cookies carry, by the rule above; undefined without one. */
export function sessionCookie(c: Ctx): string | undefined {
  if (!isHttps(c)) return getCookie(c, SESSION_COOKIE) || undefined;
  const own = getCookie(c, HOST_SESSION_COOKIE);
  if (own) return own;
  if (c.req.header("sec-fetch-site") !== undefined) return undefined;
  return getCookie(c, SESSION_COOKIE) || undefined;
}

/**
 * Sets the session cookie(s): `pod_session`, Secure everywhere except a plain-http localhost base URL
 * (where browsers would drop a Secure cookie), and `__Host-pod_session` beside it where the API is https.
 */
export function setSessionCookie(c: Ctx, token: string) {
  const base = baseOf(c);
  const local = base.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(base.hostname);
  const options = {
    httpOnly: true,
    sameSite: "Lax",
    secure: !local,
    path: "/",
    maxAge: SESSION_TTL_MS / 1000,
  } as const;
  setCookie(c, SESSION_COOKIE, token, options);
  if (base.protocol === "https:") setCookie(c, HOST_SESSION_COOKIE, token, { ...options, secure: true });
}

/** Removes the session cookie(s) from the browser (logout). */
export function clearSessionCookie(c: Ctx) {
  deleteCookie(c, SESSION_COOKIE, { path: "/" });
  if (isHttps(c)) deleteCookie(c, HOST_SESSION_COOKIE, { path: "/", secure: true });
}
