import { and, eq, isNull, sql } from "drizzle-orm";
import { dailyPrice, findPlan } from "../../../shared/catalog";
import { podCharges, pods } from "../../db/schema";
import type { BillingCall } from "./access";
import { availableCredits } from "./credits";
import { periodAt } from "./periods";

export interface UpcomingCharge {
  pod_name: string;
  pod_status: string;
  plan_slug: string;
  plan_name: string;
  monthly_rate: number;
  daily_rate: number;
  active_days: number;
  amount: number;
}

/**
 * What the next invoice holds so far: the charges accrued and not yet invoiced, per pod (its
 * days, their sum, the plan of its latest day), the credits that will apply first, and the estimate.
 */
export async function getUpcoming({ ctx, caller }: BillingCall<unknown>) {
  const rows = await ctx.db
    .select({
      lastDay: sql<string>`MAX(${podCharges.day})`,
      podName: podCharges.podName,
      planSlug: podCharges.planSlug,
      activeDays: sql<number>`COUNT(*)`,
      amount: sql<number>`SUM(${podCharges.amount})`,
      podStatus: pods.status,
    })
    .from(podCharges)
    .leftJoin(pods, eq(pods.id, podCharges.podId))
    .where(and(eq(podCharges.teamId, caller.teamId), isNull(podCharges.invoiceId)))
    .groupBy(podCharges.podId)
    .orderBy(podCharges.podName);
  const charges: UpcomingCharge[] = rows.map((r) => {
    const plan = findPlan(r.planSlug);
    return {
      pod_name: r.podName,
      pod_status: r.podStatus ?? "deleted",
      plan_slug: r.planSlug,
      plan_name: plan?.name ?? r.planSlug,
      monthly_rate: plan?.monthlyPrice ?? 0,
      daily_rate: plan ? dailyPrice(plan) : 0,
      active_days: Number(r.activeDays),
      amount: Number(r.amount),
    };
  });
  const subtotal = charges.reduce((sum, c) => sum + c.amount, 0);
  const credits = await availableCredits(ctx.db, caller.teamId);
  const period = periodAt(Date.now());
  return {
    charges,
    subtotal,
    credits_available: credits,
    estimated_total: Math.max(0, subtotal - credits),
    period_start: period.start,
    period_end: period.end,
  };
}
