import { and, eq, inArray, lt, ne } from "drizzle-orm";
import { findPlan, PLAN_SLUGS } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { invoices, pods, type SubscriptionRow, subscriptions } from "../../db/schema";
import { DAY, nowIso } from "../../lib/time";
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

/** A failed payment leaves the team `past_due` this long before it is `suspended` (no new pods). */
export const SUSPENSION_GRACE_MS = 7 * DAY;

export interface SubscriptionView {
  id: string | null;
  team_id: string;
  plan_slug: string | null;
  /** `none` until the team subscribes */
  status: SubscriptionRow["status"] | "none";
  current_period_start: string;
  current_period_end: string;
  created_at: string | null;
  processor: "stripe" | "none";
}

function toView(ctx: ServiceContext, teamId: string, row: SubscriptionRow | undefined): SubscriptionView {
  const period = periodAt(Date.now());
  return {
    id: row?.id ?? null,
    team_id: teamId,
    plan_slug: row?.planSlug ?? null,
    status: row?.status ?? "none",
    current_period_start: period.start,
    current_period_end: period.end,
    created_at: row?.createdAt ?? null,
    processor: processorName(ctx.env),
  };
}

export async function subscriptionRow(ctx: ServiceContext, teamId: string) {
  const [row] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.teamId, teamId));
  return row;
}

export async function getSubscription({ ctx, caller }: BillingCall<unknown>): Promise<SubscriptionView> {
  return toView(ctx, caller.teamId, await subscriptionRow(ctx, caller.teamId));
}

const planOf = (slug: string) =>
  findPlan(slug)
    ? ok(slug)
    : fail("bad_request", `plan_slug: unknown plan "${slug}"; one of ${PLAN_SLUGS.join(", ")}`);

/** 201 for a team without a live subscription (never subscribed, or cancelled); 409 otherwise. */
export async function subscribe({
  ctx,
  caller,
  input,
}: BillingCall<{ plan_slug: string }>): Promise<Result<SubscriptionView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const plan = planOf(input.plan_slug);
  if (!plan.ok) return plan;
  const existing = await subscriptionRow(ctx, caller.teamId);
  const now = nowIso();
  if (existing && existing.status !== "cancelled")
    return fail(
      "conflict",
      `the team already has a subscription (${existing.status}); change its plan instead`,
    );
  if (existing) {
    const moved = await ctx.db
      .update(subscriptions)
      .set({ planSlug: plan.value, status: "active", cancelledAt: null, pastDueSince: null, updatedAt: now })
      .where(and(eq(subscriptions.id, existing.id), eq(subscriptions.status, "cancelled")))
      .returning({ id: subscriptions.id });
    if (moved.length > 0) await runHooks(ctx, caller.teamId, "active");
  } else {
    await ctx.db
      .insert(subscriptions)
      .values({
        id: newId("sub"),
        teamId: caller.teamId,
        planSlug: plan.value,
        status: "active",
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoNothing();
  }
  return ok(toView(ctx, caller.teamId, await subscriptionRow(ctx, caller.teamId)));
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
  const existing = await subscriptionRow(ctx, caller.teamId);
  if (!existing || existing.status === "cancelled")
    return fail("conflict", "the team has no live subscription; subscribe first");
  await ctx.db
    .update(subscriptions)
    .set({ planSlug: plan.value, updatedAt: nowIso() })
    .where(eq(subscriptions.id, existing.id));
  return ok(toView(ctx, caller.teamId, { ...existing, planSlug: plan.value }));
}

/** Only with every pod deleted: a pod still there would keep accruing charges nobody pays. */
export async function cancelSubscription({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<Result<{ status: "cancelled" }>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const existing = await subscriptionRow(ctx, caller.teamId);
  if (!existing) return fail("not_found", "the team has no subscription");
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

/** `past_due` or `suspended` back to `active` once no invoice is left unpaid; never un-cancels. */
export async function resumeSubscription({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<Result<SubscriptionView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const existing = await subscriptionRow(ctx, caller.teamId);
  if (!existing) return fail("not_found", "the team has no subscription");
  if (existing.status === "cancelled")
    return fail("conflict", "a cancelled subscription is not resumed; subscribe again");
  if (existing.status !== "past_due" && existing.status !== "suspended")
    return ok(toView(ctx, caller.teamId, existing));
  const unpaid = await ctx.db
    .select({ id: invoices.id })
    .from(invoices)
    .where(and(eq(invoices.teamId, caller.teamId), inArray(invoices.status, ["open", "draft"])));
  if (unpaid.length > 0)
    return fail("conflict", "pay the team's unpaid invoices before resuming", {
      unpaid_invoices: unpaid.map((i) => i.id),
    });
  await ctx.db
    .update(subscriptions)
    .set({ status: "active", pastDueSince: null, updatedAt: nowIso() })
    .where(and(eq(subscriptions.id, existing.id), inArray(subscriptions.status, ["past_due", "suspended"])));
  return ok(toView(ctx, caller.teamId, { ...existing, status: "active", pastDueSince: null }));
}

/**
 * A payment failed: an `active` (or never made) subscription becomes `past_due`, the grace period
 * starting now. Already `past_due` or `suspended` keeps its clock; `cancelled` stays cancelled.
 */
export async function markPastDue(ctx: ServiceContext, teamId: string, at = nowIso()) {
  await ctx.db
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
    .onConflictDoNothing();
  await ctx.db
    .update(subscriptions)
    .set({ status: "past_due", pastDueSince: at, updatedAt: at })
    .where(and(eq(subscriptions.teamId, teamId), inArray(subscriptions.status, ["active", "trialing"])));
}

/** The cron's part: past_due beyond the grace period becomes `suspended`. */
export async function suspendOverdue(ctx: Pick<ServiceContext, "db">, now: number) {
  const cutoff = new Date(now - SUSPENSION_GRACE_MS).toISOString();
  await ctx.db
    .update(subscriptions)
    .set({ status: "suspended", updatedAt: new Date(now).toISOString() })
    .where(and(eq(subscriptions.status, "past_due"), lt(subscriptions.pastDueSince, cutoff)));
}
