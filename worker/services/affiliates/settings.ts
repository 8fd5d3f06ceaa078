import { and, eq, ne, or } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { affiliates } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { isUniqueViolation } from "../teams/slug";
import { type AffiliateCall, requireAffiliate } from "./access";
import { type AffiliateView, affiliateView } from "./views";

export interface SettingsInput {
  paypal_email?: string;
  custom_slug?: string;
}

const slugTaken = () => fail("conflict", "custom_slug is taken");

/**
 * Sets the payout email and/or the custom slug. A slug is a second name for the link: the
 * original `referral_code` keeps resolving, so a slug may not equal any affiliate's code or slug.
 */
export async function updateSettings({
  ctx,
  caller,
  input,
}: AffiliateCall<SettingsInput>): Promise<Result<AffiliateView>> {
  const found = await requireAffiliate(ctx, caller);
  if (!found.ok) return found;
  const row = found.value;
  const slug = input.custom_slug;
  if (slug !== undefined && slug !== row.customSlug) {
    const clash = await ctx.db
      .select({ id: affiliates.id })
      .from(affiliates)
      .where(
        and(
          ne(affiliates.id, row.id),
          or(eq(affiliates.referralCode, slug), eq(affiliates.customSlug, slug)),
        ),
      )
      .limit(1);
    if (clash.length) return slugTaken();
  }
  const changes = {
    ...(input.paypal_email !== undefined ? { paypalEmail: input.paypal_email } : {}),
    ...(slug !== undefined ? { customSlug: slug } : {}),
    updatedAt: nowIso(),
  };
  try {
    await ctx.db.update(affiliates).set(changes).where(eq(affiliates.id, row.id));
  } catch (error) {
    // two affiliates racing for one slug: the unique index decides
    if (isUniqueViolation(error, "affiliates.custom_slug")) return slugTaken();
    throw error;
  }
  return ok(await affiliateView(ctx, { ...row, ...changes }));
}
