import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "../http/app-env";

/**
 * Pages whose library writes `<style>` elements: xterm.js's DOM renderer (the Terminal tab) sizes its
 * rows and colours its cells through two `<style>` elements it fills at run time, which a
 * `style-src 'self'` refuses (the terminal then draws as an unstyled heap of spans), and it has no
 * nonce option. So that page alone allows inline styles; scripts stay `'self'` only, and the page
 * shows no tenant text outside the terminal itself, whose output xterm draws as text.
 */
const INLINE_STYLE_PAGES = /^\/app\/pods\/[^/]+\/terminal$/;

/**
 * What every dashboard answer carries (docs/dashboard.md "Safe by construction").
 *
 * - A Content-Security-Policy with no inline script at all: every script is a file of this origin
 *   (./assets.ts), and a page hands data to it in `data-` attributes or a JSON block, which the
 *   browser never executes. A value that slipped past JSX's escaping still could not run.
 * - `frame-ancestors 'none'` (and X-Frame-Options for old browsers): no other site can frame a
 *   signed-in page and trick a click on Delete.
 * - `form-action 'self'`, `base-uri 'none'`, `object-src 'none'`; connections only to this origin
 *   (the API, the live streams and the terminal's WebSocket).
 * - `no-store`: a page shows a team's data; a shared computer's back button must not show it again.
 */
export const dashboardHeaders: MiddlewareHandler<AppEnv> = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", (c) => (INLINE_STYLE_PAGES.test(c.req.path) ? "'unsafe-inline'" : "")],
    imgSrc: ["'self'", "data:"],
    connectSrc: ["'self'"],
    fontSrc: ["'self'"],
    frameAncestors: ["'none'"],
    formAction: ["'self'"],
    baseUri: ["'none'"],
    objectSrc: ["'none'"],
  },
  xFrameOptions: "DENY",
  referrerPolicy: "same-origin",
  crossOriginOpenerPolicy: "same-origin",
  crossOriginResourcePolicy: "same-origin",
});

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * The dashboard is served only on the API's own host (PUBLIC_URL's). Pods are served on sibling
 * host names: a dashboard answering there would put a signed-in page on a tenant's origin, and its
 * forms' Origin would never match the cross-site check. A loopback alias of a local PUBLIC_URL
 * (127.0.0.1 for localhost) is sent to PUBLIC_URL, where the session cookie lives; any other host
 * gets a 404.
 */
export const ownHostOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const own = new URL(c.env.PUBLIC_URL);
  const url = new URL(c.req.url);
  if (url.host === own.host) return next();
  if (LOOPBACK_NAMES.has(url.hostname) && LOOPBACK_NAMES.has(own.hostname) && url.port === own.port) {
    return c.redirect(new URL(url.pathname + url.search, own).toString(), 302);
  }
  return c.json({ error: `not found: the dashboard is served at ${own.origin}/app` }, 404);
};

/** `Cache-Control: no-store` on pages (not on the hashed assets, which are cached for a year). */
export const noStore: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (!c.res.headers.has("cache-control")) c.header("Cache-Control", "no-store");
};
