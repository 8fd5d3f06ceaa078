import { and, eq, inArray, sql } from "drizzle-orm";
import { referrals } from "../../db/schema";
import { onSubscriptionStatus, type SubscriptionHook } from "../billing/subscriptions";

/**
 * A referral is `churned` while the referred team's subscription is cancelled (the spec leaves the
 * condition to us; docs/affiliates.md). Subscribing again brings it back to where it was: `active`
 * once it had a paid invoice, else `pending`. The invoice that closes the cancelled period still
 * earns its commission: it pays for what was used while the team was a customer.
 */
export const churnOnCancel: SubscriptionHook = async (ctx, teamId, status) => {
  if (status === "cancelled") {
    await ctx.db
      .update(referrals)
      .set({ status: "churned" })
      .where(and(eq(referrals.referredTeamId, teamId), inArray(referrals.status, ["pending", "active"])));
    return;
  }
  await ctx.db
    .update(referrals)
    .set({ status: sql`CASE WHEN ${referrals.activatedAt} IS NULL THEN 'pending' ELSE 'active' END` })
    .where(and(eq(referrals.referredTeamId, teamId), eq(referrals.status, "churned")));
};

/** Registered once per isolate by whoever imports this module (the affiliates and billing routes). */
onSubscriptionStatus(churnOnCancel);
