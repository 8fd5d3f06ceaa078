import { newId, randomToken } from "../../../shared/ids";
import { type AffiliateRow, affiliates } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { isUniqueViolation } from "../teams/slug";
import { type AffiliateCall, findAffiliateOfUser } from "./access";
import { FIRST_TIER } from "./tiers";
import { type AffiliateView, affiliateView } from "./views";

/** 10 base32 characters: 50 random bits, so a code is not guessed and a clash is rare. */
export const newReferralCode = () => randomToken(10);

/**
 * Enrolls the caller, once: `created` is false when they were already enrolled (the existing record
 * is answered, as is the winner's when two enrollments race).
 */
export async function enroll({
  ctx,
  caller,
}: AffiliateCall<unknown>): Promise<{ created: boolean; affiliate: AffiliateView }> {
  const existing = await findAffiliateOfUser(ctx, caller.user.id);
  if (existing) return { created: false, affiliate: await affiliateView(ctx, existing) };
  const now = nowIso();
  const row: AffiliateRow = {
    id: newId("aff"),
    userId: caller.user.id,
    referralCode: newReferralCode(),
    customSlug: null,
    tierSlug: FIRST_TIER.slug,
    status: "active",
    paypalEmail: null,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await ctx.db.insert(affiliates).values(row);
  } catch (error) {
    if (!isUniqueViolation(error, "affiliates.user_id")) throw error;
    const winner = await findAffiliateOfUser(ctx, caller.user.id);
    if (!winner) throw error;
    return { created: false, affiliate: await affiliateView(ctx, winner) };
  }
  return { created: true, affiliate: await affiliateView(ctx, row) };
}
