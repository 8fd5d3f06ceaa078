import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import { defaultPaymentMethod } from "./payment-methods";
import { subscriptionRow } from "./subscriptions";

/**
 * Billing's part of admitting a new pod (create, clone, from-zip, from-repo, imports): with a
 * processor configured, the team needs a default card and a subscription that is not suspended
 * (nor cancelled: a cancelled team subscribes again first). Without one, enforcement is off.
 */
export async function billingAdmission(
  ctx: Pick<ServiceContext, "db" | "env">,
  teamId: string,
): Promise<Result<null>> {
  if (!ctx.env.STRIPE_SECRET_KEY) return ok(null);
  const context = ctx as ServiceContext;
  const subscription = await subscriptionRow(context, teamId);
  if (subscription?.status === "suspended")
    return fail(
      "payment_required",
      "the team's subscription is suspended for unpaid invoices: pay them (POST /api/billing/invoices/{id}/pay) and resume",
    );
  if (subscription?.status === "cancelled")
    return fail("payment_required", "the team's subscription is cancelled: subscribe again first");
  if (!(await defaultPaymentMethod(context, teamId)))
    return fail("payment_required", "add a payment method to the team before creating pods");
  return ok(null);
}
