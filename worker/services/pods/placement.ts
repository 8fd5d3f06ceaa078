import { and, eq, isNotNull } from "drizzle-orm";
import type { Plan } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type HostRow, hosts, pods } from "../../db/schema";
import {
  onlineHostsInRegion,
  type Resources,
  releaseCapacity,
  reserveCapacityStatement,
  whyNotPlaceable,
} from "../hosts/hosts";

export const planResources = (plan: Plan): Resources => ({
  cpu: plan.cpu,
  memoryMb: plan.memoryMb,
  diskGb: plan.diskGb,
});

/** A host with the plan's room taken on it, and the SSH ports its pods held when the room was taken. */
export interface Reserved {
  host: HostRow;
  usedPorts: ReadonlySet<number | null>;
}

/**
 * Picks a host and takes the plan's room on it: the named server, or the emptiest placeable host of
 * the region that still has room (online, no problem reported, not drained). 503 when none has; the caller releases the room if it gives up later.
 *
 * `candidates` were read by the caller (admission reads them with the name in one round trip): the
 * named server (none when unknown), or the first region's placeable hosts (hostCandidates). Each
 * reservation reads the host's SSH ports in the same batch, so the pod's port costs no round trip
 * of its own.
 */
export async function reserveHost(
  db: Db,
  target: { serverId?: string; region: string; fallbackRegions?: readonly string[] },
  plan: Plan,
  candidates: HostRow[],
): Promise<Result<Reserved>> {
  const need = planResources(plan);
  const reserve = async (host: HostRow): Promise<Reserved | null> => {
    const [taken, used] = await db.batch([
      reserveCapacityStatement(db, host.id, need),
      usedSshPorts(db, host.id),
    ]);
    return taken.length === 1 ? { host, usedPorts: new Set(used.map((u) => u.port)) } : null;
  };
  if (target.serverId) {
    const [host] = candidates;
    if (!host) return fail("bad_request", `server_id: unknown server ${target.serverId}`);
    const refused = whyNotPlaceable(host);
    if (refused) return fail("unavailable", refused);
    const reserved = await reserve(host);
    if (!reserved) return fail("unavailable", `server ${host.name} has no room for a ${plan.slug} pod`);
    return ok(reserved);
  }
  // A region the client did not name is only a preference: the next regions are tried after it.
  const tried = [target.region, ...(target.fallbackRegions ?? [])];
  for (const region of tried) {
    const hosts = region === target.region ? candidates : await onlineHostsInRegion(db, region);
    for (const host of hosts) {
      const reserved = await reserve(host);
      if (reserved) return ok(reserved);
    }
  }
  // the answer names what was tried: one region the client named, or every region when it named none
  return fail(
    "unavailable",
    tried.length > 1
      ? `no capacity in any region (${tried.join(", ")}) for a ${plan.slug} pod; try another plan or try again in a few minutes`
      : `no capacity in region ${target.region} for a ${plan.slug} pod; try another region or plan`,
  );
}

export const releaseHost = (db: Db, hostId: string, plan: Plan) =>
  releaseCapacity(db, hostId, planResources(plan));

/** The hosts reserveHost tries first: the named server, or the region's placeable hosts, emptiest first. */
export const hostCandidates = (db: Db, target: { serverId?: string; region: string }) =>
  target.serverId
    ? db.select().from(hosts).where(eq(hosts.id, target.serverId)).limit(1)
    : onlineHostsInRegion(db, target.region);

/** The SSH ports the host's pods hold. */
const usedSshPorts = (db: Db, hostId: string) =>
  db
    .select({ port: pods.sshPort })
    .from(pods)
    .where(and(eq(pods.hostId, hostId), isNotNull(pods.sshPort)));

/** The lowest SSH port of the host's range that no live pod holds (the unique index settles races). */
export async function freeSshPort(
  db: Db,
  host: HostRow,
  skip: ReadonlySet<number> = new Set(),
): Promise<number | null> {
  const used = await usedSshPorts(db, host.id);
  return lowestFreePort(host, new Set(used.map((u) => u.port)), skip);
}

/** The lowest port of the host's range neither `taken` nor to `skip`. */
export function lowestFreePort(
  host: HostRow,
  taken: ReadonlySet<number | null>,
  skip: ReadonlySet<number> = new Set(),
): number | null {
  for (let port = host.sshPortMin; port <= host.sshPortMax; port++) {
    if (!taken.has(port) && !skip.has(port)) return port;
  }
  return null;
}
