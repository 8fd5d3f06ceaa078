import { and, eq, isNotNull } from "drizzle-orm";
import type { Plan } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type HostRow, pods } from "../../db/schema";
import {
  findHost,
  onlineHostsInRegion,
  type Resources,
  releaseCapacity,
  reserveCapacity,
  whyNotPlaceable,
} from "../hosts/hosts";

export const planResources = (plan: Plan): Resources => ({
  cpu: plan.cpu,
  memoryMb: plan.memoryMb,
  diskGb: plan.diskGb,
});

/**
 * Picks a host and takes the plan's room on it: the named server, or the emptiest placeable host of
 * the region that still has room (online, no problem reported, not drained). 503 when none has; the caller releases the room if it gives up later.
 */
export async function reserveHost(
  db: Db,
  target: { serverId?: string; region: string; fallbackRegions?: readonly string[] },
  plan: Plan,
): Promise<Result<HostRow>> {
  const need = planResources(plan);
  if (target.serverId) {
    const host = await findHost(db, target.serverId);
    if (!host) return fail("bad_request", `server_id: unknown server ${target.serverId}`);
    const refused = whyNotPlaceable(host);
    if (refused) return fail("unavailable", refused);
    if (!(await reserveCapacity(db, host.id, need))) {
      return fail("unavailable", `server ${host.name} has no room for a ${plan.slug} pod`);
    }
    return ok(host);
  }
  // A region the client did not name is only a preference: the next regions are tried after it.
  const tried = [target.region, ...(target.fallbackRegions ?? [])];
  for (const region of tried) {
    for (const host of await onlineHostsInRegion(db, region)) {
      if (await reserveCapacity(db, host.id, need)) return ok(host);
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

/** The lowest SSH port of the host's range that no live pod holds (the unique index settles races). */
export async function freeSshPort(
  db: Db,
  host: HostRow,
  skip: ReadonlySet<number> = new Set(),
): Promise<number | null> {
  const used = await db
    .select({ port: pods.sshPort })
    .from(pods)
    .where(and(eq(pods.hostId, host.id), isNotNull(pods.sshPort)));
  const taken = new Set(used.map((u) => u.port));
  for (let port = host.sshPortMin; port <= host.sshPortMax; port++) {
    if (!taken.has(port) && !skip.has(port)) return port;
  }
  return null;
}
