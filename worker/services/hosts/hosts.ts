import { and, asc, eq, gt, gte, isNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type HostRow, hosts } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { nowIso } from "../../lib/time";

export const findHostByAgentToken = async (db: Db, token: string): Promise<HostRow | undefined> =>
  (
    await db
      .select()
      .from(hosts)
      .where(eq(hosts.agentTokenHash, await sha256Hex(token)))
      .limit(1)
  )[0];

export const findHost = async (db: Db, id: string): Promise<HostRow | undefined> =>
  (await db.select().from(hosts).where(eq(hosts.id, id)).limit(1))[0];

/** The agent said hello: online, with what it reports about itself (`problem` null when it can serve). */
export const markHostOnline = (db: Db, hostId: string, agentVersion: string, problem: string | null) =>
  db
    .update(hosts)
    .set({ status: "online", agentVersion, problem, lastSeenAt: nowIso() })
    .where(eq(hosts.id, hostId));

/** The agent's later word on whether it can serve (its ingress failed, or came back). */
export const setHostProblem = (db: Db, hostId: string, problem: string | null) =>
  db.update(hosts).set({ problem }).where(eq(hosts.id, hostId));

export const markHostOffline = (db: Db, hostId: string) =>
  db.update(hosts).set({ status: "offline", lastSeenAt: nowIso() }).where(eq(hosts.id, hostId));

export const touchHost = (db: Db, hostId: string) =>
  db.update(hosts).set({ lastSeenAt: nowIso() }).where(eq(hosts.id, hostId));

export interface Resources {
  cpu: number;
  memoryMb: number;
  diskGb: number;
}

/**
 * Takes `delta` of a host's capacity if it still fits (negative deltas always fit). One conditional
 * UPDATE, so concurrent placements cannot overcommit. Returns whether the room was taken.
 */
export async function reserveCapacity(db: Db, hostId: string, delta: Resources): Promise<boolean> {
  return (await reserveCapacityStatement(db, hostId, delta)).length === 1;
}

/** reserveCapacity's UPDATE, for a batch: it returns the host's id when the room was taken. */
export const reserveCapacityStatement = (db: Db, hostId: string, delta: Resources) =>
  db
    .update(hosts)
    .set({
      allocatedCpu: sql`${hosts.allocatedCpu} + ${delta.cpu}`,
      allocatedMemoryMb: sql`${hosts.allocatedMemoryMb} + ${delta.memoryMb}`,
      allocatedDiskGb: sql`${hosts.allocatedDiskGb} + ${delta.diskGb}`,
    })
    .where(
      and(
        eq(hosts.id, hostId),
        gte(sql`${hosts.cpu} - ${hosts.allocatedCpu}`, delta.cpu),
        gte(sql`${hosts.memoryMb} - ${hosts.allocatedMemoryMb}`, delta.memoryMb),
        gte(sql`${hosts.diskGb} - ${hosts.allocatedDiskGb}`, delta.diskGb),
      ),
    )
    .returning({ id: hosts.id });

export const releaseCapacity = (db: Db, hostId: string, r: Resources) =>
  db
    .update(hosts)
    .set({
      allocatedCpu: sql`max(0, ${hosts.allocatedCpu} - ${r.cpu})`,
      allocatedMemoryMb: sql`max(0, ${hosts.allocatedMemoryMb} - ${r.memoryMb})`,
      allocatedDiskGb: sql`max(0, ${hosts.allocatedDiskGb} - ${r.diskGb})`,
    })
    .where(eq(hosts.id, hostId));

/**
 * Agents ping every 15 s and the HostAgent records it at least every 30 s; a host silent for longer
 * than this is treated as offline even if its object never saw the socket close (a reset).
 */
const LIVENESS_MS = 90_000;
const alive = () =>
  and(eq(hosts.status, "online"), gt(hosts.lastSeenAt, new Date(Date.now() - LIVENESS_MS).toISOString()));

/** Whether the host's agent is there (the row's view of what `alive()` asks in SQL). */
export function isAlive(host: HostRow, now = Date.now()): boolean {
  const seen = host.lastSeenAt ? Date.parse(host.lastSeenAt) : 0;
  return host.status === "online" && now - seen <= LIVENESS_MS;
}

/** A host that takes new pods: its agent is there, it reports no problem, no operator drained it. */
const placeable = () => and(alive(), isNull(hosts.problem), eq(hosts.drained, false));

/**
 * Why a host takes no new pods right now, in words for the caller's 503; undefined when it does.
 * The same rules as `placeable`, for a host named by `server_id`.
 */
export function whyNotPlaceable(host: HostRow, now = Date.now()): string | undefined {
  if (host.drained) return `server ${host.name} is drained: it takes no new pods`;
  if (!isAlive(host, now)) return `server ${host.name} is offline; try again shortly`;
  if (host.problem) return `server ${host.name} cannot take pods: ${host.problem}`;
  return undefined;
}

/** Placeable hosts of a region with the most free memory first: the placement candidates. */
export const onlineHostsInRegion = (db: Db, region: string) =>
  db
    .select()
    .from(hosts)
    .where(and(eq(hosts.region, region), placeable()))
    .orderBy(asc(sql`${hosts.allocatedMemoryMb} * 1.0 / ${hosts.memoryMb}`))
    .limit(20);

export const regionsWithPlaceableHosts = async (db: Db): Promise<Set<string>> =>
  new Set(
    (await db.selectDistinct({ region: hosts.region }).from(hosts).where(placeable())).map((r) => r.region),
  );

/** Placeable hosts of any region, the least loaded first: where a repository can be looked at. */
export const anyPlaceableHosts = (db: Db) =>
  db
    .select()
    .from(hosts)
    .where(placeable())
    .orderBy(asc(sql`${hosts.allocatedMemoryMb} * 1.0 / ${hosts.memoryMb}`))
    .limit(5);
