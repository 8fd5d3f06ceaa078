import { and, count, desc, eq, inArray, isNull, ne } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { affiliateEarnings, affiliatePayouts, pods, referrals, subscriptions, users } from "../../db/schema";
import { type AffiliateCall, type Page, requireAffiliate } from "./access";
import { earningView, maskEmail, payoutView } from "./views";

/** The caller's referrals, newest first, emails masked; each with its team's pods and plan. */
export async function listReferrals({ ctx, caller, input }: AffiliateCall<Page>) {
  const found = await requireAffiliate(ctx, caller);
  if (!found.ok) return found;
  const where = eq(referrals.affiliateId, found.value.id);
  const rows = await ctx.db
    .select({
      referral: referrals,
      email: users.email,
      planSlug: subscriptions.planSlug,
      subscriptionStatus: subscriptions.status,
    })
    .from(referrals)
    .leftJoin(users, eq(users.id, referrals.referredUserId))
    .leftJoin(subscriptions, eq(subscriptions.teamId, referrals.referredTeamId))
    .where(where)
    .orderBy(desc(referrals.signedUpAt), desc(referrals.id))
    .limit(input.limit)
    .offset(input.offset);
  const [total] = await ctx.db.select({ n: count() }).from(referrals).where(where);
  const teamIds = rows.map((r) => r.referral.referredTeamId);
  const podCounts = teamIds.length
    ? await ctx.db
        .select({ teamId: pods.teamId, n: count() })
        .from(pods)
        .where(and(inArray(pods.teamId, teamIds), ne(pods.status, "deleted"), isNull(pods.deletedAt)))
        .groupBy(pods.teamId)
    : [];
  const podsOf = new Map(podCounts.map((p) => [p.teamId, p.n]));
  return ok({
    referrals: rows.map(({ referral: r, email, planSlug, subscriptionStatus }) => ({
      id: r.id,
      affiliate_id: r.affiliateId,
      referred_user: r.referredUserId,
      status: r.status,
      signed_up_at: r.signedUpAt,
      activated_at: r.activatedAt,
      email: maskEmail(email ?? ""),
      pod_count: podsOf.get(r.referredTeamId) ?? 0,
      plan_slug: planSlug ?? null,
      subscription_status: subscriptionStatus ?? null,
    })),
    total: total?.n ?? 0,
    limit: input.limit,
    offset: input.offset,
  });
}

export async function listEarnings({ ctx, caller, input }: AffiliateCall<Page>) {
  const found = await requireAffiliate(ctx, caller);
  if (!found.ok) return found;
  const where = eq(affiliateEarnings.affiliateId, found.value.id);
  const rows = await ctx.db
    .select()
    .from(affiliateEarnings)
    .where(where)
    .orderBy(desc(affiliateEarnings.createdAt), desc(affiliateEarnings.id))
    .limit(input.limit)
    .offset(input.offset);
  const [total] = await ctx.db.select({ n: count() }).from(affiliateEarnings).where(where);
  return ok({ earnings: rows.map(earningView), total: total?.n ?? 0, ...input });
}

export async function listPayouts({
  ctx,
  caller,
  input,
}: AffiliateCall<Page>): Promise<
  Result<{ payouts: ReturnType<typeof payoutView>[]; total: number; limit: number; offset: number }>
> {
  const found = await requireAffiliate(ctx, caller);
  if (!found.ok) return found;
  const where = eq(affiliatePayouts.affiliateId, found.value.id);
  const rows = await ctx.db
    .select()
    .from(affiliatePayouts)
    .where(where)
    .orderBy(desc(affiliatePayouts.paidAt), desc(affiliatePayouts.id))
    .limit(input.limit)
    .offset(input.offset);
  const [total] = await ctx.db.select({ n: count() }).from(affiliatePayouts).where(where);
  return ok({ payouts: rows.map(payoutView), total: total?.n ?? 0, ...input });
}
