import { and, eq, isNull, sql } from "drizzle-orm";
import { dailyPrice, findPlan } from "../../../shared/catalog";
import { podCharges, pods } from "../../db/schema";
import type { BillingCall } from "./access";
import { availableCredits } from "./credits";
import { dailyRateOf, liveTeamPods } from "./estimate";
import { periodAt, utcDay } from "./periods";

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

const planFields = (slug: string) => {
  const plan = findPlan(slug);
  return {
    plan_slug: slug,
    plan_name: plan?.name ?? slug,
    monthly_rate: plan?.monthlyPrice ?? 0,
    daily_rate: plan ? dailyPrice(plan) : 0,
  };
};

/**
 * What the next invoice holds so far, a charge per pod: the days accrued and not yet invoiced, and
 * for every live pod today's day too, at the plan it has now (the day in progress is charged when it
 * ends, whatever happens to the pod before). Every live pod is listed, with or without a processor
 * configured: enforcement off means no 402, not no accounting. Then the credits that will apply
 * first and the estimate.
 */
export async function getUpcoming({ ctx, caller }: BillingCall<unknown>) {
  const today = utcDay(Date.now());
  const [rows, live] = await Promise.all([
    ctx.db
      .select({
        podId: podCharges.podId,
        chargedToday: sql<number>`MAX(${podCharges.day} = ${today})`,
        podName: podCharges.podName,
        planSlug: podCharges.planSlug,
        activeDays: sql<number>`COUNT(*)`,
        amount: sql<number>`SUM(${podCharges.amount})`,
        podStatus: pods.status,
      })
      .from(podCharges)
      .leftJoin(pods, eq(pods.id, podCharges.podId))
      .where(and(eq(podCharges.teamId, caller.teamId), isNull(podCharges.invoiceId)))
      .groupBy(podCharges.podId),
    liveTeamPods(ctx.db, caller.teamId),
  ]);
  const byPod = new Map<string, UpcomingCharge>();
  const chargedToday = new Set<string>();
  for (const r of rows) {
    if (Number(r.chargedToday) === 1) chargedToday.add(r.podId);
    byPod.set(r.podId, {
      pod_name: r.podName,
      pod_status: r.podStatus ?? "deleted",
      ...planFields(r.planSlug),
      active_days: Number(r.activeDays),
      amount: Number(r.amount),
    });
  }
  for (const pod of live) {
    if (chargedToday.has(pod.id)) continue;
    const soFar = byPod.get(pod.id);
    byPod.set(pod.id, {
      pod_name: pod.name,
      pod_status: pod.status,
      ...planFields(pod.planSlug),
      active_days: (soFar?.active_days ?? 0) + 1,
      amount: (soFar?.amount ?? 0) + dailyRateOf(pod.planSlug),
    });
  }
  const charges = [...byPod.values()].sort((a, b) =>
    a.pod_name < b.pod_name ? -1 : a.pod_name > b.pod_name ? 1 : 0,
  );
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
