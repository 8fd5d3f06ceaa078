import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import { creditsCoverPeriod } from "./estimate";
import { defaultPaymentMethod } from "./payment-methods";
import { subscriptionRow } from "./subscriptions";

/**
 * Whether a team may have more than it has now: a new pod (create, clone, from-zip, from-repo,
 * imports), a larger plan, a database service, a restore. With a processor configured the team
 * must be payable: a subscription that is not suspended (nor cancelled: a cancelled team subscribes
 * again first), and a default card or credits that cover the current period's estimate
 * (`periodEstimate`). Without a processor, enforcement is off (the charges still accrue).
 *
 * `what` names the request in the 402's words ("creating pods", "resizing to a larger plan" …);
 * `addedDaily` is what it adds to the team's charges a day (cents), which credits must cover too.
 */
export async function billingAdmission(
  ctx: Pick<ServiceContext, "db" | "env">,
  teamId: string,
  what = "creating pods",
  addedDaily = 0,
): Promise<Result<null>> {
  if (!ctx.env.STRIPE_SECRET_KEY) return ok(null);
  const standing = await subscriptionStanding(ctx, teamId);
  if (!standing.ok) return standing;
  if (await defaultPaymentMethod(ctx as ServiceContext, teamId)) return ok(null);
  if (await creditsCoverPeriod(ctx.db, teamId, addedDaily)) return ok(null);
  return fail(
    "payment_required",
    `add a payment method to the team before ${what} (its credits do not cover this period)`,
  );
}

/**
 * What starting a pod that exists needs: a subscription that is not suspended or cancelled. A card
 * is not asked for, since a stopped pod is charged as a running one is; a suspended team's pods stay
 * stopped until `resume` settles it.
 */
export async function subscriptionStanding(
  ctx: Pick<ServiceContext, "db" | "env">,
  teamId: string,
): Promise<Result<null>> {
  if (!ctx.env.STRIPE_SECRET_KEY) return ok(null);
  const subscription = await subscriptionRow(ctx, teamId);
  if (subscription?.status === "suspended")
    return fail(
      "payment_required",
      "the team's subscription is suspended for unpaid invoices: pay them (POST /api/billing/invoices/{id}/pay) and resume (POST /api/billing/subscription/resume)",
    );
  if (subscription?.status === "cancelled")
    return fail("payment_required", "the team's subscription is cancelled: subscribe again first");
  return ok(null);
}
