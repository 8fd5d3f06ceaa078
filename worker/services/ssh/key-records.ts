import { and, eq, inArray, isNotNull, isNull, notExists, sql } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type PodSshKeyRow, podSshKeys, pods, teamMembers } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { findTeamPod } from "../pods/lookup";
import { targetOf } from "../pods/target";
import { keyMaterial } from "../ssh-keys/public-key";
import { takeKeyOut } from "./keys";

/**
 * The record of who put which key into which pod (`pod_ssh_keys`), and what it is for: when a member
 * leaves a team or is removed, the keys their account put into the team's pods come out again.
 *
 * Taking a key out needs the pod's host. A host that cannot be reached then leaves the record marked
 * (`removal_requested_at`), and the hourly cron (`departed-member-keys`, worker/scheduled.ts) tries
 * again until the key is out or the pod is gone.
 */

/**
 * Records keys put into a pod by `addedBy`. In the same batch, a key whose adder is no longer a member
 * of the pod's team (a request that started before their removal) is marked for removal at once.
 * Answers whether any was so marked.
 */
export async function recordPodKeys(
  db: Db,
  podId: string,
  addedBy: string,
  keys: { fingerprint: string; line: string; via: "auto_inject" | "api" }[],
): Promise<boolean> {
  if (keys.length === 0) return false;
  const now = nowIso();
  const [, marked] = await db.batch([
    db
      .insert(podSshKeys)
      .values(
        keys.map((k) => ({
          id: newId("psk"),
          podId,
          fingerprint: k.fingerprint,
          publicKey: k.line,
          addedBy,
          via: k.via,
          createdAt: now,
        })),
      )
      .onConflictDoUpdate({
        target: [podSshKeys.podId, podSshKeys.fingerprint, podSshKeys.addedBy],
        set: { removalRequestedAt: null },
      }),
    db
      .update(podSshKeys)
      .set({ removalRequestedAt: now })
      .where(
        and(
          eq(podSshKeys.podId, podId),
          eq(podSshKeys.addedBy, addedBy),
          notExists(
            db
              .select({ one: sql`1` })
              .from(teamMembers)
              .innerJoin(pods, eq(pods.teamId, teamMembers.teamId))
              .where(and(eq(pods.id, podId), eq(teamMembers.userId, addedBy))),
          ),
        ),
      )
      .returning({ id: podSshKeys.id }),
  ]);
  return marked.length > 0;
}

/**
 * A clone starts with its source's authorized_keys: it takes over the source's records too, so the
 * keys a member put into the source leave the clone with them. (Keys already marked for removal in
 * the source are copied marked.)
 */
export async function copyPodKeyRecords(db: Db, fromPodId: string, toPodId: string): Promise<void> {
  const rows = await db.select().from(podSshKeys).where(eq(podSshKeys.podId, fromPodId));
  if (rows.length === 0) return;
  await db
    .insert(podSshKeys)
    .values(rows.map((r) => ({ ...r, id: newId("psk"), podId: toPodId })))
    .onConflictDoNothing();
}

/** The key left the pod through the API: nobody's record of it stays. */
export const forgetPodKey = (db: Db, podId: string, fingerprint: string) =>
  db.delete(podSshKeys).where(and(eq(podSshKeys.podId, podId), eq(podSshKeys.fingerprint, fingerprint)));

/** Marks every key `userId` put into a pod of `teamId` for removal (they left the team). */
export const requestKeyRemovalsStatement = (db: Db, teamId: string, userId: string) =>
  db
    .update(podSshKeys)
    .set({ removalRequestedAt: nowIso() })
    .where(
      and(
        eq(podSshKeys.addedBy, userId),
        isNull(podSshKeys.removalRequestedAt),
        inArray(podSshKeys.podId, db.select({ id: pods.id }).from(pods).where(eq(pods.teamId, teamId))),
      ),
    );

export interface RemovalOutcome {
  /** keys taken out of pods (each with its `ssh_key_removed` event) */
  removed: number;
  /** records settled without a host call: key already gone, pod deleted, another member's key too */
  settled: number;
  /** still to do: the pod's host could not be reached (the cron tries again) */
  left: number;
}

/**
 * Takes out the keys marked for removal: those of `filter.userId` (or of one pod), or, from the
 * cron, any. A key another current member also put into the pod stays (it is theirs as well).
 */
export async function finishKeyRemovals(
  ctx: ServiceContext,
  filter: { userId?: string; podId?: string } = {},
  limit = 200,
): Promise<Result<RemovalOutcome>> {
  const rows = await ctx.db
    .select({ record: podSshKeys, pod: { teamId: pods.teamId, name: pods.name, status: pods.status } })
    .from(podSshKeys)
    .leftJoin(pods, eq(pods.id, podSshKeys.podId))
    .where(
      and(
        isNotNull(podSshKeys.removalRequestedAt),
        filter.userId ? eq(podSshKeys.addedBy, filter.userId) : undefined,
        filter.podId ? eq(podSshKeys.podId, filter.podId) : undefined,
      ),
    )
    .orderBy(podSshKeys.removalRequestedAt)
    .limit(limit);
  const outcome: RemovalOutcome = { removed: 0, settled: 0, left: 0 };
  for (const { record, pod } of rows) {
    const done = await removeOne(ctx, record, pod);
    outcome[done]++;
  }
  return ok(outcome);
}

const dropRecord = (db: Db, id: string) => db.delete(podSshKeys).where(eq(podSshKeys.id, id));

async function removeOne(
  ctx: ServiceContext,
  record: PodSshKeyRow,
  pod: { teamId: string; name: string; status: string } | null,
): Promise<keyof RemovalOutcome> {
  const material = keyMaterial(record.publicKey);
  if (!pod || pod.status === "deleted" || !material) {
    await dropRecord(ctx.db, record.id);
    return "settled";
  }
  const [kept] = await ctx.db
    .select({ id: podSshKeys.id })
    .from(podSshKeys)
    .where(
      and(
        eq(podSshKeys.podId, record.podId),
        eq(podSshKeys.fingerprint, record.fingerprint),
        isNull(podSshKeys.removalRequestedAt),
      ),
    )
    .limit(1);
  if (kept) {
    await dropRecord(ctx.db, record.id);
    return "settled";
  }
  const found = await findTeamPod(ctx.db, pod.teamId, pod.name);
  const target = found.ok ? targetOf(found.value) : found;
  if (!target.ok) return "left";
  const taken = await takeKeyOut(
    ctx,
    target.value,
    material,
    "removed: the member who added it left the team",
  );
  if (!taken.ok) return "left";
  await dropRecord(ctx.db, record.id);
  return taken.value === "removed" ? "removed" : "settled";
}
