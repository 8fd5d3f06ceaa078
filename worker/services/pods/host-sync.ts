import { and, eq, inArray, ne, sql } from "drizzle-orm";
import type { PodState } from "../../../shared/protocol";
import type { Db } from "../../db/client";
import { type PodStatus, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { recordEventStatement } from "./events";

/** The statuses the host decides; `deleted` and `suspended` are decisions of the control plane. */
const HOST_DRIVEN: PodStatus[] = ["creating", "running", "stopped", "error"];

const statusOfState = { running: "running", stopped: "stopped", missing: "error" } as const;

/**
 * What the host reports about a container becomes the pod's status and IP. Scoped by host id, so
 * an agent can only ever move pods placed on its own host. Unexpected changes are logged as events.
 * Answers the pod's new status when it changed (its alerts follow from it).
 */
export async function applyPodState(
  db: Db,
  hostId: string,
  state: PodState,
  options: { reason?: string; settlesCreation?: boolean } = {},
): Promise<PodStatusChange | null> {
  const { reason } = options;
  // The answer that ends a creation, in one round trip: the pod moves out of `creating` only (a
  // repeated answer, a delete meanwhile, a pod already running find no row and take the long way).
  // Its status is what GET /api/pods shows next, so the round trip is on the way to `running`.
  if (options.settlesCreation && !reason) {
    const status = statusOfState[state.state];
    const [moved] = await db
      .update(pods)
      .set({ status, ip: state.ip ?? sql`${pods.ip}`, updatedAt: nowIso() })
      .where(and(eq(pods.name, state.name), eq(pods.hostId, hostId), eq(pods.status, "creating")))
      .returning({ id: pods.id });
    if (moved) return { podId: moved.id, status, reason: null };
  }
  const [pod] = await db
    .select({ id: pods.id, status: pods.status, ip: pods.ip })
    .from(pods)
    .where(and(eq(pods.name, state.name), eq(pods.hostId, hostId), inArray(pods.status, HOST_DRIVEN)))
    .limit(1);
  if (!pod) return null;
  // A pod being created is running only once its creation (vhost, files …) is done, whatever a
  // look at its container says in the meantime.
  if (pod.status === "creating" && !options.settlesCreation) return null;
  const status = statusOfState[state.state];
  const ip = state.ip ?? pod.ip;
  if (pod.status === status && pod.ip === ip) return null;
  const change = pod.status === status ? null : { podId: pod.id, status, reason: reason ?? null };
  const update = db.update(pods).set({ status, ip, updatedAt: nowIso() }).where(eq(pods.id, pod.id));
  if (!reason) {
    await update;
    return change;
  }
  const type = status === "error" ? "error" : status === "running" ? "started" : "stopped";
  await db.batch([update, recordEventStatement(db, pod.id, type, reason, { source: "host" })]);
  return change;
}

/** A pod the host's word moved to another status. */
export interface PodStatusChange {
  podId: string;
  status: PodStatus;
  reason: string | null;
}

/**
 * On every (re)connect: the agent's inventory is the truth about containers. Pods whose container
 * vanished become `error` with an event (a pod still `creating` is left to its create command, which
 * may not have made its container yet); containers with no live pod are returned as orphans for the
 * agent to report (never silently kept, never silently deleted). Live is every pod placed on the
 * host but `deleted`: a `suspended` pod's stopped container is its customer's, never an orphan, and
 * its status stays the control plane's (not host-driven, so not moved here). Answers the orphans and
 * the pods whose status moved.
 */
export async function reconcileInventory(
  db: Db,
  hostId: string,
  inventory: PodState[],
): Promise<{ orphans: string[]; changes: PodStatusChange[] }> {
  const seen = new Map(inventory.map((p) => [p.name, p]));
  const live = await db
    .select({ id: pods.id, name: pods.name, status: pods.status, ip: pods.ip })
    .from(pods)
    .where(and(eq(pods.hostId, hostId), ne(pods.status, "deleted")));
  const now = nowIso();
  const statements = [];
  const changes: PodStatusChange[] = [];
  for (const pod of live) {
    if (!HOST_DRIVEN.includes(pod.status)) continue;
    // Its create command settles it, and until that command has made the container the host has
    // none to list: a reconnect mid-create is not a vanished container.
    if (pod.status === "creating") continue;
    const state = seen.get(pod.name);
    if (!state) {
      if (pod.status === "error") continue;
      changes.push({ podId: pod.id, status: "error", reason: "the pod's container is missing on its host" });
      statements.push(
        db.update(pods).set({ status: "error", updatedAt: now }).where(eq(pods.id, pod.id)),
        recordEventStatement(db, pod.id, "error", "the pod's container is missing on its host", {
          source: "reconcile",
        }),
      );
      continue;
    }
    const status = statusOfState[state.state];
    if (status !== pod.status) changes.push({ podId: pod.id, status, reason: null });
    if (status !== pod.status || (state.ip && state.ip !== pod.ip)) {
      statements.push(
        db
          .update(pods)
          .set({ status, ip: state.ip ?? pod.ip, updatedAt: now })
          .where(eq(pods.id, pod.id)),
      );
    }
  }
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);

  const known = new Set(live.map((p) => p.name));
  const orphans = inventory.filter((p) => !known.has(p.name)).map((p) => p.name);
  if (orphans.length > 0) {
    console.warn(JSON.stringify({ hostId, msg: "containers with no live pod on this host", orphans }));
  }
  return { orphans, changes };
}
