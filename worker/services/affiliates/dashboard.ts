import { count, eq } from "drizzle-orm";
import type { Result } from "../../../shared/errors";
import { ok } from "../../../shared/errors";
import { affiliateVisits } from "../../db/schema";
import { type AffiliateCall, requireAffiliate } from "./access";
import { nextTier, type Tier, tierOf } from "./tiers";
import { type AffiliateView, affiliateView } from "./views";

const tierView = (t: Tier) => ({ slug: t.slug, name: t.name, commission_rate: t.commissionPercent });

export interface Dashboard {
  affiliate: AffiliateView;
  tier: ReturnType<typeof tierView>;
  next_tier?: ReturnType<typeof tierView> & { milestone_amount: number; bonus_amount: number };
  progress_pct: number;
  pending_balance: number;
  referral_link: string;
  referral_link_alt: string;
  visit_count: number;
}

/**
 * `progress_pct` is the referred revenue as a whole percent of the next milestone, rounded down and
 * capped at 100 (100 with no next tier). `pending_balance` is earned and not yet paid out.
 */
export async function getDashboard({ ctx, caller }: AffiliateCall<unknown>): Promise<Result<Dashboard>> {
  const found = await requireAffiliate(ctx, caller);
  if (!found.ok) return found;
  const row = found.value;
  const affiliate = await affiliateView(ctx, row);
  const [visits] = await ctx.db
    .select({ n: count() })
    .from(affiliateVisits)
    .where(eq(affiliateVisits.affiliateId, row.id));
  const next = nextTier(row.tierSlug);
  const progress = next
    ? Math.min(100, Math.floor((affiliate.total_revenue * 100) / Math.max(1, next.milestone)))
    : 100;
  const base = ctx.env.PUBLIC_URL.replace(/\/+$/, "");
  return ok({
    affiliate,
    tier: tierView(tierOf(row.tierSlug)),
    ...(next
      ? { next_tier: { ...tierView(next), milestone_amount: next.milestone, bonus_amount: next.bonus } }
      : {}),
    progress_pct: progress,
    pending_balance: affiliate.total_earnings - affiliate.total_paid_out,
    referral_link: `${base}/r/${row.customSlug ?? row.referralCode}`,
    referral_link_alt: `${base}/?ref=${row.referralCode}`,
    visit_count: visits?.n ?? 0,
  });
}
