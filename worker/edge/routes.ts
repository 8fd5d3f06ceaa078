import { edgeSecretFromTokenHash } from "../../shared/edge-proof";
import type { Bindings } from "../env";
import { createIsolateCache } from "../lib/isolate-cache";

/**
 * Where a visitor's host name goes (docs/edge.md "The route cache and its invalidation"): the pod it
 * names and the host that runs it, read from D1 once and then kept in this isolate, so a visit
 * costs no D1 read while its route is cached. Not every route is kept (`kept`): a pod's name with
 * no pod yet, or a pod still being created, is read again at every visit, so a pod serves from the
 * first visit after it runs.
 *
 * Invalidation reaches every isolate, whoever made the change (a request, a Workflow moving a pod,
 * the agent's reports, the cron): SQL triggers write each change of a route to the change feed
 * `edge_route_changes` (worker/db/schema/edge-route-changes.ts), and each isolate reads the rows
 * after the last one it saw at most once per CHECK_EVERY_MS, in the background of a visit (the
 * visit never waits for it), dropping those names' entries. A successful change request through
 * the API also clears its own isolate's caches at once (worker/http/middleware.ts). ROUTE_TTL_MS
 * is only the safety net beside the feed.
 */
export type EdgeRoute =
  | { kind: "none" }
  | {
      kind: "pod";
      pod: string;
      status: string;
      /** null: the pod has no host (never placed), or its host cannot be reached through the edge */
      host: { name: string; online: boolean; origin: string; secret: string } | null;
    };

/** how often an isolate reads the change feed (a visit starts it in its background when it is due) */
export const CHECK_EVERY_MS = 1_000;
/** a route's life in the cache without any change seen (the feed drops changed ones sooner) */
export const ROUTE_TTL_MS = 60_000;
/** rows read per check; more than that and the whole cache is dropped instead */
const FEED_PAGE = 500;

const routes = createIsolateCache<EdgeRoute>({ ttlMs: ROUTE_TTL_MS });

interface RouteRow {
  /** the feed's last row when the route was read (same statement: one snapshot) */
  seq: number | null;
  pod: string | null;
  status: string;
  host_name: string | null;
  host_status: string | null;
  origin: string | null;
  token_hash: string | null;
}

const COLUMNS = `p.name AS pod, p.status AS status, h.name AS host_name, h.status AS host_status,
  h.ingress_origin AS origin, h.agent_token_hash AS token_hash`;
/** the route (or nothing) beside the feed's last seq, in one row and one read */
const withSeq = (select: string) => `SELECT (SELECT max(seq) FROM edge_route_changes) AS seq, r.*
  FROM (SELECT 1) LEFT JOIN (${select}) r ON 1`;
/** one read: the pod named by its own host name, with its host (a deleted pod is no pod) */
const BY_POD_NAME = withSeq(`SELECT ${COLUMNS} FROM pods p LEFT JOIN hosts h ON h.id = p.host_id
  WHERE p.name = ? AND p.status != 'deleted'`);
/** one read: the pod a verified custom domain belongs to, with its host */
const BY_DOMAIN = withSeq(`SELECT ${COLUMNS} FROM domains d JOIN pods p ON p.id = d.pod_id
  LEFT JOIN hosts h ON h.id = p.host_id WHERE d.domain = ? AND d.status = 'verified' AND p.status != 'deleted'`);

/** The change feed as this isolate has read it. */
const feed = {
  /** the last seq whose change this isolate's cache reflects; unknown until its first route read */
  seen: undefined as number | undefined,
  checkedAt: 0,
  running: false,
};

/** The route of `hostname`: a pod's own name (`{name}.{POD_DOMAIN}`: `podName` set) or a custom domain. */
export async function findRoute(
  env: Bindings,
  hostname: string,
  podName: string | null,
  background?: (work: Promise<unknown>) => void,
): Promise<EdgeRoute> {
  if (background && feed.seen !== undefined && !feed.running && Date.now() - feed.checkedAt >= CHECK_EVERY_MS)
    background(readChanges(env));
  const key = podName === null ? `d:${hostname}` : `p:${podName}`;
  const cached = routes.get(key);
  if (cached) return cached;
  const row = await env.DB.prepare(podName === null ? BY_DOMAIN : BY_POD_NAME)
    .bind(podName ?? hostname)
    .first<RouteRow>();
  // every change after this read has a later seq, so the feed will show it
  if (feed.seen === undefined) {
    feed.seen = row?.seq ?? 0;
    feed.checkedAt = Date.now();
  }
  const route: EdgeRoute = row?.pod
    ? {
        kind: "pod",
        pod: row.pod,
        status: row.status,
        host:
          row.host_name && row.origin && row.token_hash
            ? {
                name: row.host_name,
                online: row.host_status === "online",
                origin: row.origin,
                secret: await edgeSecretFromTokenHash(row.token_hash),
              }
            : null,
      }
    : { kind: "none" };
  // read before changes the feed has already been seen past: the feed will not show them again
  if (kept(route, podName !== null) && (row?.seq ?? 0) >= (feed.seen ?? 0)) routes.set(key, route);
  return route;
}

/**
 * A route worth keeping: a pod that runs (the visits a cache is for), or one its owner stopped or
 * that was suspended (it stays so; a popular stopped site costs no read per visit). Not kept: a pod
 * being created or in error, and no pod under a pod's own name. Those are what a visitor meets
 * right before a pod serves (a URL opened as the pod is made, a "starting" page reloaded), and a
 * kept one would outlive the change by up to a feed period plus a visit (CHECK_EVERY_MS): a page
 * polled from the create on answered ~0.5 s after the pod ran. Reading them again costs a D1 read
 * per such visit, which made-up pod names cost anyway (each new name is a read, whatever is kept).
 * A name that is no verified custom domain is kept: every API request under a name other than
 * PUBLIC_URL's (a workers.dev address) asks here first, and a domain is verified through the API.
 */
function kept(route: EdgeRoute, byPodName: boolean): boolean {
  if (route.kind === "none") return !byPodName;
  return route.status === "running" || route.status === "stopped" || route.status === "suspended";
}

/** Reads the feed after `feed.seen` and drops the changed names' routes (all of them for a `*`). */
async function readChanges(env: Bindings): Promise<void> {
  const after = feed.seen;
  if (after === undefined) return;
  feed.running = true;
  try {
    const { results } = await env.DB.prepare(
      "SELECT seq, key FROM edge_route_changes WHERE seq > ? ORDER BY seq LIMIT ?",
    )
      .bind(after, FEED_PAGE)
      .all<{ seq: number; key: string }>();
    const last = results.at(-1);
    if (results.length >= FEED_PAGE || results.some((r) => r.key === "*")) routes.clear();
    else for (const r of results) routes.delete(r.key);
    // a cache cleared meanwhile (forgetCachedReads) is no reason to go back
    if (last && (feed.seen ?? 0) < last.seq) feed.seen = last.seq;
  } catch (error) {
    console.warn("edge: the route change feed could not be read", { error: String(error) });
  } finally {
    feed.checkedAt = Date.now();
    feed.running = false;
  }
}

/** The cron's pruning of the feed (worker/scheduled.ts): rows older than any isolate can still need. */
export const FEED_KEEP_MS = 10 * 60_000;
export async function pruneRouteChanges(env: Bindings, now: number): Promise<void> {
  await env.DB.prepare("DELETE FROM edge_route_changes WHERE at < ?")
    .bind(now - FEED_KEEP_MS)
    .run();
}
