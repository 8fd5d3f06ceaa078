import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { billingJobCursors } from "../../db/schema";
import type { Bindings } from "../../env";
import { createMailer } from "../mail/mailer";
import { ACCRUAL_PAGE_TEAMS, accrueTeamsPage } from "./accrual";
import { invoiceEndedPeriods } from "./invoicing";
import { accrualDayAt } from "./periods";
import { stripeClient } from "./stripe";
import { suspendOverdue } from "./subscriptions";

/**
 * The billing cron job (worker/scheduled.ts), run on every trigger and cheap when nothing is due:
 * 1. the daily accrual of the day that ended, a page of teams at a time, its cursor kept in D1 so
 *    a run cut short goes on where it stopped and a finished day is not walked again;
 * 2. invoicing of ended periods, only once the accrual of the last day is complete;
 * 3. `past_due` beyond the grace period to `suspended`; then (worker/scheduled.ts, the same job)
 *    the pods of suspended teams are stopped and those of teams active again started
 *    (services/billing/suspension.ts, kept out of this module: it speaks to hosts).
 * Without a processor key only the accrual runs (the upcoming view still shows the charges).
 */

const ACCRUAL = "daily-accrual";
/** pages per trigger: bounds one invocation's work; the next trigger continues */
const PAGES_PER_RUN = 500;

export async function accrueDay(db: Db, day: string, pageTeams = ACCRUAL_PAGE_TEAMS): Promise<boolean> {
  const [state] = await db.select().from(billingJobCursors).where(eq(billingJobCursors.job, ACCRUAL));
  if (state?.day === day && state.done) return true;
  let cursor = state?.day === day ? state.cursor : "";
  for (let page = 0; page < PAGES_PER_RUN; page++) {
    const result = await accrueTeamsPage(db, day, cursor, pageTeams);
    const done = result.lastTeamId === null;
    cursor = result.lastTeamId ?? cursor;
    await db
      .insert(billingJobCursors)
      .values({ job: ACCRUAL, day, cursor, done })
      .onConflictDoUpdate({ target: billingJobCursors.job, set: { day, cursor, done } });
    if (done) return true;
  }
  return false;
}

export async function runBilling({ db, env, now }: { db: Db; env: Bindings; now: number }): Promise<void> {
  const accrued = await accrueDay(db, accrualDayAt(now));
  const stripe = stripeClient(env);
  if (!stripe) return;
  const ctx = { db, env, mailer: createMailer(db, env) };
  if (accrued) await invoiceEndedPeriods(ctx, stripe, now);
  await suspendOverdue(ctx, now);
}
