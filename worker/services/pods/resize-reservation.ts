import { asc, eq, lte, sql } from "drizzle-orm";
import { findPlan, type Plan } from "../../../shared/catalog";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type PodResizeRow, podResizes, pods } from "../../db/schema";
import { callHost } from "../../durable-objects/host-agent/client";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import type { Resources } from "../hosts/hosts";
import { limitsOf } from "./spec";

/**
 * The host capacity a resize holds while it runs (docs/pods.md "Resizing", docs/reliability.md).
 * A resize takes the plan's growth on its host, asks the host for the new limits, then records the
 * plan. Each of those writes is one D1 batch naming the resize's row in `pod_resizes`:
 * - claim: the row and the growth taken on the host, or neither (no room, another resize of the
 *   pod, the pod moving or changed);
 * - finish: the plan recorded, a shrink's room given back, the `resized` event, the row removed;
 * - give back: the growth returned to the host, the row removed.
 * A batch that finds the row gone does nothing, so whatever runs them, and however often, the host's
 * allocation counts the pod's recorded plan exactly once. A request cut between them (a Worker
 * restart, a lost answer, a failed write) leaves the row; `settleResize` then makes the host's
 * limits those of the recorded plan again and gives the room back: by the pod's next resize, or by
 * the cron within the hour.
 */

/** how long the host may take to apply new limits */
export const RESIZE_CALL_TIMEOUT_MS = 30_000;
/** until then the request that made a row may still be working on it: nobody else settles it */
export const RESIZE_HOLD_MS = 2 * 60_000;
/** rows the cron settles per run */
const SETTLE_PAGE = 50;

/** What moving from `from` to `to` takes on the host (`grow`) and gives back once recorded (`shrink`). */
export function resizeDelta(from: Plan, to: Plan): { grow: Resources; shrink: Resources } {
  const part = (sign: 1 | -1): Resources => ({
    cpu: Math.max(0, sign * (to.cpu - from.cpu)),
    memoryMb: Math.max(0, sign * (to.memoryMb - from.memoryMb)),
    diskGb: Math.max(0, sign * (to.diskGb - from.diskGb)),
  });
  return { grow: part(1), shrink: part(-1) };
}

export type Claim =
  | { claimed: true; token: string }
  | { claimed: false; earlier: PodResizeRow }
  | { claimed: false; why: "moving" | "no_room" | "changed" };

/**
 * Takes the growth of `from` → `to` on the pod's host together with the row that says so, in one
 * batch: both, or neither when the host has no room, the pod has another resize in flight (the key),
 * is being moved, or is no longer on that host with that plan.
 */
export async function claimResize(
  db: Db,
  r: { podId: string; hostId: string; from: Plan; to: Plan },
  now = Date.now(),
): Promise<Claim> {
  const token = newId("rsz");
  const { grow } = resizeDelta(r.from, r.to);
  const created = new Date(now).toISOString();
  const settleAfter = new Date(now + RESIZE_HOLD_MS).toISOString();
  const d1 = db.$client;
  await d1.batch([
    d1
      .prepare(
        `INSERT INTO pod_resizes
           (pod_id, token, host_id, from_plan, to_plan, cpu, memory_mb, disk_gb, settle_after, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
         WHERE EXISTS (SELECT 1 FROM hosts WHERE id = ?3 AND cpu - allocated_cpu >= ?6
             AND memory_mb - allocated_memory_mb >= ?7 AND disk_gb - allocated_disk_gb >= ?8)
           AND EXISTS (SELECT 1 FROM pods WHERE id = ?1 AND host_id = ?3 AND plan_slug = ?4
             AND status != 'deleted')
           AND NOT EXISTS (SELECT 1 FROM pod_moves WHERE pod_id = ?1 AND status IN ('queued', 'moving'))
         ON CONFLICT (pod_id) DO NOTHING`,
      )
      .bind(
        r.podId,
        token,
        r.hostId,
        r.from.slug,
        r.to.slug,
        grow.cpu,
        grow.memoryMb,
        grow.diskGb,
        settleAfter,
        created,
      ),
    d1
      .prepare(
        `UPDATE hosts SET allocated_cpu = allocated_cpu + ?2, allocated_memory_mb = allocated_memory_mb + ?3,
           allocated_disk_gb = allocated_disk_gb + ?4
         WHERE id = ?1 AND EXISTS (SELECT 1 FROM pod_resizes WHERE token = ?5)`,
      )
      .bind(r.hostId, grow.cpu, grow.memoryMb, grow.diskGb, token),
  ]);
  const row = await pendingResize(db, r.podId);
  if (row?.token === token) return { claimed: true, token };
  if (row) return { claimed: false, earlier: row };
  const moving = await db.get<{ n: number } | undefined>(
    sql`SELECT 1 AS n FROM pod_moves WHERE pod_id = ${r.podId} AND status IN ('queued', 'moving')`,
  );
  if (moving) return { claimed: false, why: "moving" };
  const room = await db.get<{ n: number } | undefined>(sql`SELECT 1 AS n FROM hosts WHERE id = ${r.hostId}
      AND cpu - allocated_cpu >= ${grow.cpu} AND memory_mb - allocated_memory_mb >= ${grow.memoryMb}
      AND disk_gb - allocated_disk_gb >= ${grow.diskGb}`);
  return { claimed: false, why: room ? "changed" : "no_room" };
}

export const pendingResize = async (db: Db, podId: string): Promise<PodResizeRow | undefined> =>
  (await db.select().from(podResizes).where(eq(podResizes.podId, podId)).limit(1))[0];

/**
 * Records the new plan, gives back a shrink's room and writes the `resized` event, in one batch that
 * also removes the row. False when the row is gone (settled by someone else), or the pod is no longer
 * on the row's host with its old plan or has a move queued (whose target room is for the old plan):
 * nothing was written then.
 */
export async function finishResize(
  db: Db,
  r: { token: string; podId: string; hostId: string; from: Plan; to: Plan },
): Promise<boolean> {
  const { shrink } = resizeDelta(r.from, r.to);
  const finishing = "EXISTS (SELECT 1 FROM pod_resizes WHERE token = ?1 AND finishing = 1)";
  const d1 = db.$client;
  const results = await d1.batch([
    d1
      .prepare(
        `UPDATE pod_resizes SET finishing = 1 WHERE token = ?1
           AND EXISTS (SELECT 1 FROM pods WHERE pods.id = pod_resizes.pod_id
             AND pods.host_id = pod_resizes.host_id AND pods.plan_slug = pod_resizes.from_plan
             AND pods.status != 'deleted')
           AND NOT EXISTS (SELECT 1 FROM pod_moves WHERE pod_moves.pod_id = pod_resizes.pod_id
             AND pod_moves.status IN ('queued', 'moving'))`,
      )
      .bind(r.token),
    d1
      .prepare(
        `UPDATE hosts SET allocated_cpu = max(0, allocated_cpu - ?3),
           allocated_memory_mb = max(0, allocated_memory_mb - ?4), allocated_disk_gb = max(0, allocated_disk_gb - ?5)
         WHERE id = ?2 AND ${finishing}`,
      )
      .bind(r.token, r.hostId, shrink.cpu, shrink.memoryMb, shrink.diskGb),
    d1
      .prepare(
        `INSERT INTO pod_events (id, pod_id, type, message, metadata, created_at)
         SELECT ?2, ?3, 'resized', ?4, ?5, ?6 WHERE ${finishing}`,
      )
      .bind(
        r.token,
        newId("evt"),
        r.podId,
        `plan changed from ${r.from.slug} to ${r.to.slug}`,
        JSON.stringify({ from: r.from.slug, to: r.to.slug }),
        nowIso(),
      ),
    d1
      .prepare(`UPDATE pods SET plan_slug = ?3, updated_at = ?4 WHERE id = ?2 AND ${finishing}`)
      .bind(r.token, r.podId, r.to.slug, nowIso()),
    d1.prepare("DELETE FROM pod_resizes WHERE token = ?1 AND finishing = 1").bind(r.token),
  ]);
  return results[4]?.meta.changes === 1;
}

/**
 * The growth the row took goes back to its host and the row is removed, in one batch; false when the
 * row was already gone (given back or finished by someone else: nothing was written).
 */
export async function giveBackResize(db: Db, token: string): Promise<boolean> {
  const d1 = db.$client;
  const taken = (column: string) => `(SELECT ${column} FROM pod_resizes WHERE token = ?1)`;
  const [, removed] = await d1.batch([
    d1
      .prepare(
        `UPDATE hosts SET allocated_cpu = max(0, allocated_cpu - ${taken("cpu")}),
           allocated_memory_mb = max(0, allocated_memory_mb - ${taken("memory_mb")}),
           allocated_disk_gb = max(0, allocated_disk_gb - ${taken("disk_gb")})
         WHERE id = ${taken("host_id")}`,
      )
      .bind(token),
    d1.prepare("DELETE FROM pod_resizes WHERE token = ?1").bind(token),
  ]);
  return removed?.meta.changes === 1;
}

/** The request that made the row gave up on it with the outcome unknown: anyone may settle it now. */
export const releaseHold = (db: Db, token: string) =>
  db.update(podResizes).set({ settleAfter: nowIso() }).where(eq(podResizes.token, token));

/**
 * A resize that did not finish is undone: the pod's host gets the limits of the plan D1 records
 * (the host may have applied the new ones before the answer was lost; the op is idempotent), then
 * the row's room goes back. With the pod deleted or no longer on the row's host there is no
 * container to correct: the room goes back at once. Fails (and leaves the row) only while the host
 * cannot be asked (`unavailable`, `rate_limited`); any other answer of the host is final.
 */
export async function settleResize(
  env: Bindings,
  db: Db,
  row: PodResizeRow,
): Promise<{ ok: true } | { ok: false; code: "unavailable" | "rate_limited"; message: string }> {
  const applied = await applyRecordedLimits(env, db, row);
  if (!applied.ok) return applied;
  const gaveBack = await giveBackResize(db, row.token);
  if (!gaveBack && applied.plan) {
    // someone else settled or finished it meanwhile: if that recorded another plan, its limits win
    const now = await podOf(db, row.podId);
    if (now && now.planSlug !== applied.plan) await applyRecordedLimits(env, db, row);
  }
  console.warn(
    JSON.stringify({
      msg: "resize: settled",
      pod: row.podId,
      host: row.hostId,
      from: row.fromPlan,
      to: row.toPlan,
      gaveBack,
    }),
  );
  return { ok: true };
}

const podOf = async (db: Db, podId: string) =>
  (
    await db
      .select({
        name: pods.name,
        teamId: pods.teamId,
        hostId: pods.hostId,
        status: pods.status,
        planSlug: pods.planSlug,
      })
      .from(pods)
      .where(eq(pods.id, podId))
      .limit(1)
  )[0];

/** The recorded plan's limits on the pod's container, when the pod still lives on the row's host. */
async function applyRecordedLimits(
  env: Bindings,
  db: Db,
  row: PodResizeRow,
): Promise<
  { ok: true; plan?: string } | { ok: false; code: "unavailable" | "rate_limited"; message: string }
> {
  const pod = await podOf(db, row.podId);
  const plan = pod && findPlan(pod.planSlug);
  if (!pod || !plan || pod.status === "deleted" || pod.hostId !== row.hostId) return { ok: true };
  const answer = await callHost(
    env,
    row.hostId,
    "pod.resize",
    { name: pod.name, limits: limitsOf(plan) },
    { timeoutMs: RESIZE_CALL_TIMEOUT_MS, teamId: pod.teamId },
  );
  if (!answer.ok && (answer.code === "unavailable" || answer.code === "rate_limited")) {
    return { ok: false, code: answer.code, message: answer.message };
  }
  return { ok: true, plan: plan.slug };
}

/**
 * The cron's safety net: every resize row past its hold (a request cut by a restart, a failed
 * write, an answer lost) is settled; rows whose host cannot be asked stay for the next run.
 */
export async function settleStuckResizes(env: Bindings, db: Db, now = Date.now()): Promise<number> {
  const due = await db
    .select()
    .from(podResizes)
    .where(lte(podResizes.settleAfter, new Date(now).toISOString()))
    .orderBy(asc(podResizes.settleAfter))
    .limit(SETTLE_PAGE);
  let settled = 0;
  for (const row of due) if ((await settleResize(env, db, row)).ok) settled++;
  return settled;
}
