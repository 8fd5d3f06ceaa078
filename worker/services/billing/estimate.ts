import { and, eq, isNull, ne, sql } from "drizzle-orm";
import { dailyPrice, findPlan, PLANS } from "../../../shared/catalog";
import type { Db } from "../../db/client";
import { podCharges, pods } from "../../db/schema";
import { DAY } from "../../lib/time";
import { availableCredits } from "./credits";
import { periodAt, utcDay } from "./periods";

/**
 * What a team will be charged that is not charged yet: its live pods (every status but `deleted`:
 * stopped, suspended and broken pods are charged as running ones are) at their plans' daily rates.
 */

export interface LivePod {
  id: string;
  name: string;
  status: string;
  planSlug: string;
}

export const liveTeamPods = (db: Db, teamId: string): Promise<LivePod[]> =>
  db
    .select({ id: pods.id, name: pods.name, status: pods.status, planSlug: pods.planSlug })
    .from(pods)
    .where(and(eq(pods.teamId, teamId), ne(pods.status, "deleted")))
    .orderBy(pods.name);

/** A plan's daily rate; an unknown plan (a catalog change) at the smallest plan's, as the accrual does. */
export const dailyRateOf = (slug: string): number =>
  dailyPrice(findPlan(slug) ?? (PLANS[0] as (typeof PLANS)[number]));

/** The UTC days from `now`'s day to the end of its period, both included. */
export function daysLeftInPeriod(now: number): number {
  const end = Date.parse(periodAt(now).end);
  const today = Date.parse(`${utcDay(now)}T00:00:00.000Z`);
  return Math.round((end - today) / DAY);
}

/**
 * The team's bill if nothing changes until the current period ends: the charges accrued and not
 * yet invoiced, plus each live pod at its plan's rate for every day from today to the period's end.
 */
export async function periodEstimate(db: Db, teamId: string, now = Date.now()): Promise<number> {
  const [[accrued], live] = await Promise.all([
    db
      .select({ sum: sql<number>`COALESCE(SUM(${podCharges.amount}), 0)` })
      .from(podCharges)
      .where(and(eq(podCharges.teamId, teamId), isNull(podCharges.invoiceId))),
    liveTeamPods(db, teamId),
  ]);
  const days = daysLeftInPeriod(now);
  return Number(accrued?.sum ?? 0) + live.reduce((sum, p) => sum + dailyRateOf(p.planSlug) * days, 0);
}

/**
 * Whether the team's usable credits pay for everything its current period will be charged, with
 * `addedDaily` more a day from today (a new pod's rate, a larger plan's difference). No credits
 * cover nothing, not even a team with nothing to pay for.
 */
export async function creditsCoverPeriod(
  db: Db,
  teamId: string,
  addedDaily: number,
  now = Date.now(),
): Promise<boolean> {
  const [credits, estimate] = await Promise.all([
    availableCredits(db, teamId),
    periodEstimate(db, teamId, now),
  ]);
  return credits > 0 && credits >= estimate + addedDaily * daysLeftInPeriod(now);
}
