import { edgeSecretFromTokenHash } from "../../shared/edge-proof";
import type { Bindings } from "../env";
import { createIsolateCache } from "../lib/isolate-cache";

/**
 * Where a visitor's host name goes (docs/edge.md "The route cache"): the pod it names and the host
 * that runs it, read from D1 once and then kept in this isolate for the isolate cache's few seconds
 * (worker/lib/isolate-cache.ts), so a visit costs no D1 read while its route is cached. Every change
 * made through the API (a pod stopped, deleted, cloned, a domain verified or removed) clears the cache
 * of the isolate that made it; any other isolate follows within the TTL. Absent names are cached too,
 * so a flood of made-up host names costs one read per name per TTL, not one per request.
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

const routes = createIsolateCache<EdgeRoute>();

interface RouteRow {
  pod: string;
  status: string;
  host_name: string | null;
  host_status: string | null;
  origin: string | null;
  token_hash: string | null;
}

const COLUMNS = `p.name AS pod, p.status AS status, h.name AS host_name, h.status AS host_status,
  h.ingress_origin AS origin, h.agent_token_hash AS token_hash`;
/** one read: the pod named by its own host name, with its host (a deleted pod is no pod) */
const BY_POD_NAME = `SELECT ${COLUMNS} FROM pods p LEFT JOIN hosts h ON h.id = p.host_id
  WHERE p.name = ? AND p.status != 'deleted'`;
/** one read: the pod a verified custom domain belongs to, with its host */
const BY_DOMAIN = `SELECT ${COLUMNS} FROM domains d JOIN pods p ON p.id = d.pod_id
  LEFT JOIN hosts h ON h.id = p.host_id WHERE d.domain = ? AND d.status = 'verified' AND p.status != 'deleted'`;

/** The route of `hostname`: a pod's own name (`{name}.{POD_DOMAIN}`: `podName` set) or a custom domain. */
export async function findRoute(env: Bindings, hostname: string, podName: string | null): Promise<EdgeRoute> {
  const key = podName === null ? `d:${hostname}` : `p:${podName}`;
  const cached = routes.get(key);
  if (cached) return cached;
  const row = await env.DB.prepare(podName === null ? BY_DOMAIN : BY_POD_NAME)
    .bind(podName ?? hostname)
    .first<RouteRow>();
  const route: EdgeRoute = row
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
  routes.set(key, route);
  return route;
}
