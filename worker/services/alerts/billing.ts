import type { Db } from "../../db/client";
import type { Bindings } from "../../env";
import { raiseTeamAlert, resolveTeamAlert } from "./raise";

/**
 * The billing events (docs/alerts.md), the team's own (no pod): called by the one caller whose
 * conditional update moved the subscription, so each fires once per incident.
 * - `payment_failed`: the subscription went `past_due` (a declined charge, no card, Stripe's
 *   `invoice.payment_failed`);
 * - `team_suspended`: the grace period ended and the cron suspended it (its pods stop);
 * both resolved when the team is `active` again (every invoice paid, `resume`).
 */

const BILLING_PAGE = "/app/billing";

export const alertOnPaymentFailed = (env: Bindings, db: Db, teamId: string, graceDays: number) =>
  raiseTeamAlert(env, db, {
    event: "payment_failed",
    teamId,
    path: BILLING_PAGE,
    summary: (team) =>
      `A payment of ${team} failed. Pay the open invoice within ${graceDays} days, or the team is suspended and its pods stop.`,
  });

export const alertOnTeamSuspended = (env: Bindings, db: Db, teamId: string) =>
  raiseTeamAlert(env, db, {
    event: "team_suspended",
    teamId,
    path: BILLING_PAGE,
    summary: (team) =>
      `${team} is suspended for unpaid invoices: its pods are stopped (their files are kept) until it pays and resumes.`,
  });

export async function resolveBillingAlerts(env: Bindings, db: Db, teamId: string) {
  await resolveTeamAlert(env, db, {
    event: "team_suspended",
    teamId,
    path: BILLING_PAGE,
    summary: (team) => `${team} is active again: its pods start again.`,
  });
  await resolveTeamAlert(env, db, {
    event: "payment_failed",
    teamId,
    path: BILLING_PAGE,
    summary: (team) => `${team}'s invoices are paid and its subscription is active again.`,
  });
}
