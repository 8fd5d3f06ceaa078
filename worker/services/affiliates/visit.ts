import { eq, inArray, lt, or } from "drizzle-orm";
import { randomToken } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { affiliates, affiliateVisits } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { REFERRAL_WINDOW_MS } from "./attribution";

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

/** rows deleted per statement, and statements per cron run, by `expireVisits` */
const EXPIRE_PAGE = 2_000;
const EXPIRE_PAGES = 10;

/**
 * The cron's sweep (worker/scheduled.ts): clicks older than the referral window attribute nothing
 * any more (their cookie has expired too), so their rows go, a page at a time. Returns how many.
 */
export async function expireVisits(db: Db, now: number): Promise<number> {
  const cutoff = new Date(now - REFERRAL_WINDOW_MS).toISOString();
  let total = 0;
  for (let page = 0; page < EXPIRE_PAGES; page++) {
    const old = db
      .select({ id: affiliateVisits.id })
      .from(affiliateVisits)
      .where(lt(affiliateVisits.createdAt, cutoff))
      .limit(EXPIRE_PAGE);
    const gone = await db
      .delete(affiliateVisits)
      .where(inArray(affiliateVisits.id, old))
      .returning({ id: affiliateVisits.id });
    total += gone.length;
    if (gone.length < EXPIRE_PAGE) break;
  }
  return total;
}
