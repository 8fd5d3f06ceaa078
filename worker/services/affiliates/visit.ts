import { eq, or } from "drizzle-orm";
import { randomToken } from "../../../shared/ids";
import { affiliates, affiliateVisits } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";

export interface VisitInput {
  code: string;
  /** the visitor's own account when they are signed in */
  signedInUserId?: string;
}

/**
 * Counts a click on a referral link. Returns the visit's id (the referral cookie's value: 32
 * random base32 characters, 160 bits, so a forged cookie names no visit), or null when nothing is
 * counted: an unknown code, or the affiliate clicking their own link.
 */
export async function recordVisit({ ctx, input }: { ctx: ServiceContext; input: VisitInput }) {
  const code = input.code.trim().toLowerCase();
  if (!code) return null;
  const [affiliate] = await ctx.db
    .select({ id: affiliates.id, userId: affiliates.userId })
    .from(affiliates)
    .where(or(eq(affiliates.referralCode, code), eq(affiliates.customSlug, code)))
    .limit(1);
  if (!affiliate || affiliate.userId === input.signedInUserId) return null;
  const id = randomToken(32);
  await ctx.db.insert(affiliateVisits).values({ id, affiliateId: affiliate.id, createdAt: nowIso() });
  return id;
}
