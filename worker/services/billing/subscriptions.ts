import { and, eq, inArray, lt, ne } from "drizzle-orm";
import { findPlan, PLAN_SLUGS } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { pods, type SubscriptionRow, subscriptions } from "../../db/schema";
import { DAY, nowIso } from "../../lib/time";
import { alertOnPaymentFailed, alertOnTeamSuspended } from "../alerts/billing";
import type { ServiceContext } from "../context";
import { type BillingCall, requireBillingOwner } from "./access";
import { periodAt } from "./periods";
import { processorName } from "./stripe";

/**
 * What follows a subscription ending (cancel) or starting again (a cancelled team subscribing):
 * the affiliate referral's `churned` is one. Registered by the module that cares, so billing does
 * not import it.
 */
export type SubscriptionHook = (
  ctx: ServiceContext,
  teamId: string,
  status: "active" | "cancelled",
) => Promise<void>;
const hooks: SubscriptionHook[] = [];
export const onSubscriptionStatus = (hook: SubscriptionHook) => {
  hooks.push(hook);
};
const runHooks = async (ctx: ServiceContext, teamId: string, status: "active" | "cancelled") => {
  for (const hook of hooks) await hook(ctx, teamId, status);
};

/**
 * A failed payment leaves the team `past_due` this long before it is `suspended` (no new pods, no
 * larger plans, its running pods stopped: services/billing/suspension.ts).
 */
export const SUSPENSION_GRACE_MS = 7 * DAY;

export interface SubscriptionView {
  id: string;
  team_id: string;
  plan_slug: string;
  status: SubscriptionRow["status"];
  current_period_start: string;
  current_period_end: string;
  created_at: string;
  processor: "stripe" | "none";
}

export function toSubscriptionView(
  ctx: ServiceContext,
  teamId: string,
  row: SubscriptionRow,
): SubscriptionView {
  const period = periodAt(Date.now());
  return {
    id: row.id,
    team_id: teamId,
    plan_slug: row.planSlug,
    status: row.status,
    current_period_start: period.start,
    current_period_end: period.end,
    created_at: row.createdAt,
    processor: processorName(ctx.env),
  };
}

/** Every team's subscription from its start (`teamStatements`): active, on the Launch plan. */
export const initialSubscription = (ctx: Pick<ServiceContext, "db">, teamId: string, now: string) =>
  ctx.db
    .insert(subscriptions)
    .values({
      id: newId("sub"),
      teamId,
      planSlug: "launch",
      status: "active",
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing();

export async function subscriptionRow(ctx: Pick<ServiceContext, "db">, teamId: string) {
  const [row] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.teamId, teamId));
  return row;
}

/**
 * The team's subscription. Every team gets one when it is made (and migration 0020 gave one to every
 * team made before); a team still without one (a row lost by hand) gets its first here.
 */
export async function ensureSubscription(ctx: Pick<ServiceContext, "db">, teamId: string) {
  const row = await subscriptionRow(ctx, teamId);
  if (row) return row;
  await initialSubscription(ctx, teamId, nowIso());
  const made = await subscriptionRow(ctx, teamId);
  if (!made) throw new Error(`no subscription could be made for team ${teamId}`);
  return made;
}

export async function getSubscription({ ctx, caller }: BillingCall<unknown>): Promise<SubscriptionView> {
  return toSubscriptionView(ctx, caller.teamId, await ensureSubscription(ctx, caller.teamId));
}

const planOf = (slug: string) =>
  findPlan(slug)
    ? ok(slug)
    : fail("bad_request", `plan_slug: unknown plan "${slug}"; one of ${PLAN_SLUGS.join(", ")}`);

/**
 * 201 with the team's subscription on the plan asked for: a live one (`active`, `trialing`: every
 * team has one from its start) takes the plan as `PUT …/plan` does, a cancelled one is active again.
 * `past_due` and `suspended` are 409: the unpaid invoices and `resume` come first.
 */
export async function subscribe({
  ctx,
  caller,
  input,
}: BillingCall<{ plan_slug: string }>): Promise<Result<SubscriptionView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const plan = planOf(input.plan_slug);
  if (!plan.ok) return plan;
  const existing = await ensureSubscription(ctx, caller.teamId);
  const now = nowIso();
  if (existing.status === "past_due" || existing.status === "suspended")
    return fail(
      "conflict",
      `the team's subscription is ${existing.status}: pay its unpaid invoices and resume (POST /api/billing/subscription/resume)`,
    );
  if (existing.status === "cancelled") {
    const moved = await ctx.db
      .update(subscriptions)
      .set({ planSlug: plan.value, status: "active", cancelledAt: null, pastDueSince: null, updatedAt: now })
      .where(and(eq(subscriptions.id, existing.id), eq(subscriptions.status, "cancelled")))
      .returning({ id: subscriptions.id });
    if (moved.length > 0) await runHooks(ctx, caller.teamId, "active");
  } else {
    await ctx.db
      .update(subscriptions)
      .set({ planSlug: plan.value, updatedAt: now })
      .where(eq(subscriptions.id, existing.id));
  }
  return ok(toSubscriptionView(ctx, caller.teamId, await ensureSubscription(ctx, caller.teamId)));
}

/**
 * Takes effect at once. Pods are charged per day at their own plan's rate, so a change is prorated
 * by construction: nothing already accrued is recomputed and no lump sum is billed.
 */
export async function changePlan({
  ctx,
  caller,
  input,
}: BillingCall<{ plan_slug: string }>): Promise<Result<SubscriptionView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const plan = planOf(input.plan_slug);
  if (!plan.ok) return plan;
  const existing = await ensureSubscription(ctx, caller.teamId);
  if (existing.status === "cancelled")
    return fail("conflict", "the team's subscription is cancelled; subscribe first");
  await ctx.db
    .update(subscriptions)
    .set({ planSlug: plan.value, updatedAt: nowIso() })
    .where(eq(subscriptions.id, existing.id));
  return ok(toSubscriptionView(ctx, caller.teamId, { ...existing, planSlug: plan.value }));
}

/** Only with every pod deleted: a pod still there would keep accruing charges nobody pays. */
export async function cancelSubscription({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<Result<{ status: "cancelled" }>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const existing = await ensureSubscription(ctx, caller.teamId);
  if (existing.status === "cancelled") return ok({ status: "cancelled" });
  const live = await ctx.db
    .select({ name: pods.name })
    .from(pods)
    .where(and(eq(pods.teamId, caller.teamId), ne(pods.status, "deleted")))
    .limit(50);
  if (live.length > 0)
    return fail(
      "conflict",
      `delete every pod of the team before cancelling; still there: ${live.map((p) => p.name).join(", ")}`,
    );
  const moved = await ctx.db
    .update(subscriptions)
    .set({ status: "cancelled", cancelledAt: nowIso(), updatedAt: nowIso() })
    .where(and(eq(subscriptions.id, existing.id), ne(subscriptions.status, "cancelled")))
    .returning({ id: subscriptions.id });
  if (moved.length > 0) await runHooks(ctx, caller.teamId, "cancelled");
  return ok({ status: "cancelled" });
}

/**
 * A payment failed: an `active` (or never made) subscription becomes `past_due`, the grace period
 * starting now, and the team's `payment_failed` alert fires. Already `past_due` or `suspended` keeps
 * its clock (and alerts no more); `cancelled` stays cancelled.
 */
export async function markPastDue(ctx: ServiceContext, teamId: string, at = nowIso()) {
  const made = await ctx.db
    .insert(subscriptions)
    .values({
      id: newId("sub"),
      teamId,
      planSlug: "launch",
      status: "past_due",
      pastDueSince: at,
      createdAt: at,
      updatedAt: at,
    })
    .onConflictDoNothing()
    .returning({ id: subscriptions.id });
  const moved = await ctx.db
    .update(subscriptions)
    .set({ status: "past_due", pastDueSince: at, updatedAt: at })
    .where(and(eq(subscriptions.teamId, teamId), inArray(subscriptions.status, ["active", "trialing"])))
    .returning({ id: subscriptions.id });
  if (made.length + moved.length > 0)
    await alertOnPaymentFailed(ctx.env, ctx.db, teamId, SUSPENSION_GRACE_MS / DAY);
}

/** The cron's part: past_due beyond the grace period becomes `suspended` (and alerts `team_suspended`). */
export async function suspendOverdue(ctx: Pick<ServiceContext, "db" | "env">, now: number) {
  const cutoff = new Date(now - SUSPENSION_GRACE_MS).toISOString();
  const suspended = await ctx.db
    .update(subscriptions)
    .set({ status: "suspended", updatedAt: new Date(now).toISOString() })
    .where(and(eq(subscriptions.status, "past_due"), lt(subscriptions.pastDueSince, cutoff)))
    .returning({ teamId: subscriptions.teamId });
  for (const { teamId } of suspended) await alertOnTeamSuspended(ctx.env, ctx.db, teamId);
}
