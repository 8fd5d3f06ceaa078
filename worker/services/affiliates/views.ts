import { eq, sql } from "drizzle-orm";
import {
  type AffiliateRow,
  affiliateEarnings,
  affiliatePayouts,
  type EarningRow,
  type PayoutRow,
  referrals,
} from "../../db/schema";
import type { ServiceContext } from "../context";

export interface AffiliateView {
  id: string;
  user_id: string;
  referral_code: string;
  custom_slug: string | null;
  paypal_email: string | null;
  tier_slug: string;
  status: string;
  total_revenue: number;
  total_earnings: number;
  total_paid_out: number;
  referral_count: number;
  created_at: string;
}

/**
 * The totals are sums over the earnings, payouts and referrals rows rather than counters kept
 * beside them: nothing can drift, and each is one indexed aggregate per affiliate.
 */
export async function affiliateView(ctx: ServiceContext, row: AffiliateRow): Promise<AffiliateView> {
  const [totals] = await ctx.db
    .select({
      revenue: sql<number>`coalesce(sum(case when ${affiliateEarnings.kind} = 'commission' then ${affiliateEarnings.paymentAmount} end), 0)`,
      earnings: sql<number>`coalesce(sum(${affiliateEarnings.commissionAmount}), 0)`,
      paidOut: sql<number>`(select coalesce(sum(${affiliatePayouts.amount}), 0) from ${affiliatePayouts} where ${affiliatePayouts.affiliateId} = ${row.id})`,
      referralCount: sql<number>`(select count(*) from ${referrals} where ${referrals.affiliateId} = ${row.id})`,
    })
    .from(affiliateEarnings)
    .where(eq(affiliateEarnings.affiliateId, row.id));
  return {
    id: row.id,
    user_id: row.userId,
    referral_code: row.referralCode,
    custom_slug: row.customSlug,
    paypal_email: row.paypalEmail,
    tier_slug: row.tierSlug,
    status: row.status,
    total_revenue: Number(totals?.revenue ?? 0),
    total_earnings: Number(totals?.earnings ?? 0),
    total_paid_out: Number(totals?.paidOut ?? 0),
    referral_count: Number(totals?.referralCount ?? 0),
    created_at: row.createdAt,
  };
}

/** `ada@example.com` → `a***@example.com`: enough to recognise, not enough to contact. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  if (at <= 0) return "***";
  return `${email.slice(0, 1)}***${email.slice(at)}`;
}

export const earningView = (r: EarningRow) => ({
  id: r.id,
  affiliate_id: r.affiliateId,
  referral_id: r.referralId,
  invoice_id: r.invoiceId,
  kind: r.kind,
  payment_amount: r.paymentAmount,
  commission_rate: r.commissionRate,
  commission_amount: r.commissionAmount,
  tier_slug: r.tierSlug,
  created_at: r.createdAt,
});

export const payoutView = (r: PayoutRow) => ({
  id: r.id,
  affiliate_id: r.affiliateId,
  amount: r.amount,
  method: r.method,
  status: r.status,
  reference: r.reference,
  note: r.note,
  paid_at: r.paidAt,
  created_at: r.createdAt,
});
