import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { newId } from "../../../shared/ids";
import { affiliateEarnings, affiliates, referrals } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { onInvoicePaid, type PaidInvoiceHook } from "../billing/invoice-paid";
import type { ServiceContext } from "../context";
import { commissionOf, TIERS, tierOf, tierRank, tiersReached } from "./tiers";

/**
 * A referred team's paid invoice: the referral becomes `active` (on the first; a `churned` one stays
 * churned, and the invoice closing the team's last period still earns), the affiliate earns
 * the commission at the tier they hold at payment time (rate and tier snapshotted on the earning),
 * then, when the referred revenue has crossed a milestone, the tier goes up (never down) and each
 * crossed tier's bonus is credited as an earning. The payment that crosses earns at the old rate.
 *
 * Safe to run twice for one invoice (a replayed webhook, a retried hook): the earning's key
 * `commission:<invoice>` is unique, so the second run inserts nothing, and the tier step only
 * ever moves up with bonuses keyed `bonus:<affiliate>:<tier>`.
 */
export const earnOnInvoicePaid: PaidInvoiceHook = async (ctx, invoice) => {
  const [found] = await ctx.db
    .select({ referral: referrals, tierSlug: affiliates.tierSlug })
    .from(referrals)
    .innerJoin(affiliates, eq(affiliates.id, referrals.affiliateId))
    .where(eq(referrals.referredTeamId, invoice.teamId))
    .limit(1);
  if (!found) return;
  const { referral } = found;
  const now = nowIso();
  const tier = tierOf(found.tierSlug);
  if (invoice.amountPaid > 0) {
    // one transaction: the activation and the earning land together or not at all
    await ctx.db.batch([
      ctx.db
        .update(referrals)
        .set({
          status: sql`CASE WHEN ${referrals.status} = 'pending' THEN 'active' ELSE ${referrals.status} END`,
          activatedAt: now,
        })
        .where(and(eq(referrals.id, referral.id), isNull(referrals.activatedAt))),
      ctx.db
        .insert(affiliateEarnings)
        .values({
          id: newId("earn"),
          affiliateId: referral.affiliateId,
          referralId: referral.id,
          invoiceId: invoice.id,
          kind: "commission",
          paymentAmount: invoice.amountPaid,
          commissionRate: tier.commissionPercent,
          commissionAmount: commissionOf(invoice.amountPaid, tier.commissionPercent),
          tierSlug: tier.slug,
          dedupeKey: `commission:${invoice.id}`,
          createdAt: now,
        })
        .onConflictDoNothing(),
    ]);
  }
  await upgradeTier(ctx, referral.affiliateId, invoice.id);
};

/** Moves the affiliate up to the highest tier their referred revenue has reached, with each bonus once. */
export async function upgradeTier(ctx: ServiceContext, affiliateId: string, invoiceId: string | null) {
  const [row] = await ctx.db
    .select({ tierSlug: affiliates.tierSlug })
    .from(affiliates)
    .where(eq(affiliates.id, affiliateId));
  if (!row) return;
  const [paid] = await ctx.db
    .select({ revenue: sql<number>`coalesce(sum(${affiliateEarnings.paymentAmount}), 0)` })
    .from(affiliateEarnings)
    .where(and(eq(affiliateEarnings.affiliateId, affiliateId), eq(affiliateEarnings.kind, "commission")));
  const reached = tiersReached(row.tierSlug, Number(paid?.revenue ?? 0));
  const top = reached.at(-1);
  if (!top) return;
  const now = nowIso();
  const lower = TIERS.slice(0, tierRank(top.slug)).map((t) => t.slug);
  await ctx.db.batch([
    // conditional: only up, so a concurrent upgrade past this one is never undone
    ctx.db
      .update(affiliates)
      .set({ tierSlug: top.slug, updatedAt: now })
      .where(and(eq(affiliates.id, affiliateId), inArray(affiliates.tierSlug, lower))),
    ...reached
      .filter((t) => t.bonus > 0)
      .map((t) =>
        ctx.db
          .insert(affiliateEarnings)
          .values({
            id: newId("earn"),
            affiliateId,
            referralId: null,
            invoiceId,
            kind: "bonus",
            paymentAmount: 0,
            commissionRate: 0,
            commissionAmount: t.bonus,
            tierSlug: t.slug,
            dedupeKey: `bonus:${affiliateId}:${t.slug}`,
            createdAt: now,
          })
          .onConflictDoNothing(),
      ),
  ]);
}

/** Registered once per isolate by whoever imports this module (the app and the cron both do). */
onInvoicePaid(earnOnInvoicePaid);
