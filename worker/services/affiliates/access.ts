import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { type AffiliateRow, affiliates } from "../../db/schema";
import type { Caller } from "../auth/caller";
import type { ServiceContext } from "../context";

/** What an affiliate verb receives: the caller (an affiliate is a user, not a team) and the input. */
export interface AffiliateCall<I> {
  ctx: ServiceContext;
  caller: Caller;
  input: I;
}

export const findAffiliateOfUser = async (ctx: ServiceContext, userId: string) =>
  (await ctx.db.select().from(affiliates).where(eq(affiliates.userId, userId)).limit(1))[0];

/** The caller's own affiliate record: only ever their own, so nobody reads another's. */
export async function requireAffiliate(ctx: ServiceContext, caller: Caller): Promise<Result<AffiliateRow>> {
  const row = await findAffiliateOfUser(ctx, caller.user.id);
  return row ? ok(row) : fail("not_found", "not enrolled");
}

/** A page of a list: `limit` rows from `offset`. */
export interface Page {
  limit: number;
  offset: number;
}
