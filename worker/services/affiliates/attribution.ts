import { eq } from "drizzle-orm";
import { newId } from "../../../shared/ids";
import { affiliates, affiliateVisits, referrals, users } from "../../db/schema";
import { DAY, nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";

/** How long a click attributes a sign-up: the cookie's Max-Age, and checked again here. */
export const REFERRAL_WINDOW_MS = 30 * DAY;

export interface SignupInput {
  /** the referral cookie's value, if the browser sent one */
  visitId?: string;
  userId: string;
  teamId: string;
  email: string;
  /** an account already signed in on the browser that registers */
  signedInUserId?: string;
}

/** `ada+promo@x.io` and `ada@x.io` are one mailbox. */
const mailbox = (email: string) => email.toLowerCase().replace(/\+[^@]*@/, "@");

/**
 * Makes a new account a `pending` referral of the affiliate whose link it came through. Not a
 * referral: an unknown or expired visit (a forged cookie names none), the affiliate themself, a
 * sign-up from a browser where the affiliate is signed in, or an address of the affiliate's own
 * mailbox (plus-addressing). Returns whether a referral was made.
 */
export async function attributeSignup({ ctx, input }: { ctx: ServiceContext; input: SignupInput }) {
  if (!input.visitId || input.visitId.length > 64) return false;
  const [visit] = await ctx.db
    .select({
      createdAt: affiliateVisits.createdAt,
      affiliateUserId: affiliates.userId,
      affiliateId: affiliates.id,
    })
    .from(affiliateVisits)
    .innerJoin(affiliates, eq(affiliates.id, affiliateVisits.affiliateId))
    .where(eq(affiliateVisits.id, input.visitId))
    .limit(1);
  if (!visit || Date.now() - Date.parse(visit.createdAt) > REFERRAL_WINDOW_MS) return false;
  if (visit.affiliateUserId === input.userId || visit.affiliateUserId === input.signedInUserId) return false;
  const [owner] = await ctx.db
    .select({ email: users.email })
    .from(users)
    .where(eq(users.id, visit.affiliateUserId))
    .limit(1);
  if (!owner || mailbox(owner.email) === mailbox(input.email)) return false;
  const made = await ctx.db
    .insert(referrals)
    .values({
      id: newId("ref"),
      affiliateId: visit.affiliateId,
      referredUserId: input.userId,
      referredTeamId: input.teamId,
      status: "pending",
      signedUpAt: nowIso(),
      activatedAt: null,
    })
    .onConflictDoNothing()
    .returning({ id: referrals.id });
  return made.length > 0;
}
