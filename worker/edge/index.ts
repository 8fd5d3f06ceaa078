import { EDGE_HEADERS } from "../../shared/edge-proof";
import { isCustomDomain } from "../../shared/protocol/domains";
import type { Bindings } from "../env";
import { type EdgePage, edgePage } from "./pages";
import { proofHeaders } from "./proof";
import { findRoute } from "./routes";

/**
 * The pods' front door (docs/edge.md): a visitor's request for `{name}.{POD_DOMAIN}` or a pod's
 * verified custom domain is forwarded, as it streams, to the ingress of the host that runs the pod,
 * with the edge's proof (shared/edge-proof.ts) and the visitor's address. Everything else is the
 * API's and the dashboard's. Nothing here buffers a body or reads D1 on a cached route.
 */

/** request headers a visitor may send that only the edge may set (the proof's and the address's) */
const EDGE_ONLY = [
  ...Object.values(EDGE_HEADERS),
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-forwarded-host",
  "x-real-ip",
  "forwarded",
];

let apiHost: { url: string; hostname: string } | undefined;
function apiHostname(publicUrl: string): string {
  if (apiHost?.url !== publicUrl) apiHost = { url: publicUrl, hostname: hostnameOf(publicUrl) };
  return apiHost.hostname;
}

/** a URL's host name, "" when it is no URL (the Workers types here declare neither URL.parse nor URL.canParse) */
function hostnameOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}

/** The pod name a host name under the pod domain names (one label), "" for other names under it, null outside it. */
export function podNameOf(hostname: string, podDomain: string): string | null {
  const suffix = `.${podDomain}`;
  if (!hostname.endsWith(suffix)) return hostname === podDomain ? "" : null;
  const label = hostname.slice(0, -suffix.length);
  return label.includes(".") ? "" : label;
}

/**
 * The edge's answer for this request, or null when the host name is not a pod's (the API answers).
 * A name under the pod domain is always the edge's (a 404 page when no pod has it); any other name
 * is the edge's only when it is a pod's verified custom domain.
 */
export async function routeToPod(
  request: Request,
  env: Bindings,
  ctx: Pick<ExecutionContext, "waitUntil">,
): Promise<Response | null> {
  const url = new URL(request.url);
  const hostname = url.hostname;
  const podName = podNameOf(hostname, env.POD_DOMAIN);
  if (podName === "") return edgePage("unknown", hostname);
  // the API's own names (PUBLIC_URL's, localhost, an address) can be no pod's domain: no D1 read
  if (podName === null && (!isCustomDomain(hostname) || hostname === apiHostname(env.PUBLIC_URL)))
    return null;
  const route = await findRoute(env, hostname, podName, (work) => ctx.waitUntil(work));
  if (route.kind === "none") return podName === null ? null : edgePage("unknown", hostname);
  if (route.status === "stopped" || route.status === "suspended") return edgePage("stopped", hostname);
  if (route.status !== "running") return edgePage("starting", hostname);
  if (!route.host?.online) return edgePage("away", hostname);
  return forward(request, url, route.host, hostname);
}

/** methods a retry cannot make do anything twice (RFC 9110 §9.2.2) */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
const replayable = (request: Request) => request.body === null && IDEMPOTENT.has(request.method);

/**
 * An ingress reload (a pod created or deployed on that host) closes its idle connections, and those
 * the edge's pool picks at that instant are lost ("Network connection lost"), several at once when
 * the pool held several. A visit without a body that cannot change anything twice goes again, as a
 * browser does, until a live connection (each lost one leaves the pool) or a new one takes it.
 */
async function sendAgain(send: () => Promise<Response>, replayable: boolean): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      // only a connection lost once made: a host that refuses or never answers is not asked again
      if (!replayable || attempt >= SEND_ATTEMPTS || !String(error).includes(LOST)) throw error;
    }
  }
}
const SEND_ATTEMPTS = 4;
/** workerd's (and Cloudflare's) words for a connection closed under a request */
const LOST = "Network connection lost";

async function forward(
  request: Request,
  url: URL,
  host: { name: string; origin: string; secret: string },
  hostname: string,
): Promise<Response> {
  const headers = new Headers(request.headers);
  for (const name of EDGE_ONLY) headers.delete(name);
  // Cloudflare sets CF-Connecting-IP from the connection (a visitor cannot choose it); wrangler dev
  // does the same for a local visitor
  const client = request.headers.get("cf-connecting-ip") ?? "127.0.0.1";
  const proto = url.protocol === "https:" ? "https" : "http";
  const uri = `${url.pathname}${url.search}`;
  for (const [name, value] of await proofHeaders(
    { method: request.method, host: hostname, uri, client, proto },
    host.secret,
  ))
    headers.set(name, value);
  headers.set("x-forwarded-proto", proto);
  const send = () =>
    fetch(`${host.origin}${uri}`, {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual",
    });
  let res: Response;
  try {
    res = await sendAgain(send, replayable(request));
  } catch (error) {
    console.warn("edge: host unreachable", { host: host.name, error: String(error) });
    return edgePage("away", hostname);
  }
  // the ingress's own answers (marked by it) become the edge's pages; the app's pass through
  const mark = res.headers.get("x-podhost-ingress");
  if (mark === null) return res;
  const page: EdgePage = mark === "unavailable" ? "unavailable" : "away";
  if (mark === "forbidden") console.warn("edge: the host refused the edge's proof", { host: host.name });
  await res.body?.cancel();
  return edgePage(page, hostname);
}
