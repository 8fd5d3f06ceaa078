import { and, asc, desc, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type CreditRow, type CreditType, creditApplications, credits, invoices } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { BillingCall } from "./access";

export interface CreditView {
  id: string;
  amount: number;
  remaining: number;
  type: CreditType;
  reason: string;
  expires_at: string | null;
  created_at: string;
}

const toView = (r: CreditRow): CreditView => ({
  id: r.id,
  amount: r.amount,
  remaining: r.remaining,
  type: r.type,
  reason: r.reason,
  expires_at: r.expiresAt,
  created_at: r.createdAt,
});

/** Credits that can still pay something, soonest-expiring first (never-expiring last): the order they are used in. */
export function usableCredits(db: Db, teamId: string, at: string) {
  return db
    .select()
    .from(credits)
    .where(
      and(
        eq(credits.teamId, teamId),
        gt(credits.remaining, 0),
        or(isNull(credits.expiresAt), gt(credits.expiresAt, at)),
      ),
    )
    .orderBy(sql`${credits.expiresAt} IS NULL`, asc(credits.expiresAt), asc(credits.createdAt));
}

export async function availableCredits(db: Db, teamId: string, at = nowIso()): Promise<number> {
  return (await usableCredits(db, teamId, at)).reduce((sum, c) => sum + c.remaining, 0);
}

export async function listCredits({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<{ available: number; credits: CreditView[] }> {
  const rows = await ctx.db
    .select()
    .from(credits)
    .where(eq(credits.teamId, caller.teamId))
    .orderBy(desc(credits.createdAt));
  return { available: await availableCredits(ctx.db, caller.teamId), credits: rows.map(toView) };
}

/**
 * Applies the team's credits to an invoice's subtotal, once: the credits' `remaining` goes down,
 * each use is recorded, and the invoice's `credits_applied` is set, all in one transaction (a
 * batch). An invoice whose credits were applied already is left as it is.
 */
export async function applyCredits(
  db: Db,
  invoiceId: string,
  teamId: string,
  subtotal: number,
): Promise<number> {
  const [inv] = await db.select().from(invoices).where(eq(invoices.id, invoiceId));
  if (!inv || inv.creditsApplied !== null) return inv?.creditsApplied ?? 0;
  let left = subtotal;
  const uses: { id: string; amount: number }[] = [];
  for (const credit of await usableCredits(db, teamId, nowIso())) {
    if (left <= 0) break;
    const amount = Math.min(left, credit.remaining);
    uses.push({ id: credit.id, amount });
    left -= amount;
  }
  const applied = subtotal - left;
  await db.batch([
    db
      .update(invoices)
      .set({ subtotal, creditsApplied: applied, amountDue: subtotal - applied, updatedAt: nowIso() })
      .where(and(eq(invoices.id, invoiceId), isNull(invoices.creditsApplied))),
    ...uses.flatMap((u) => [
      db
        .update(credits)
        .set({ remaining: sql`${credits.remaining} - ${u.amount}` })
        .where(and(eq(credits.id, u.id), sql`${credits.remaining} >= ${u.amount}`)),
      db.insert(creditApplications).values({ invoiceId, creditId: u.id, amount: u.amount }),
    ]),
  ]);
  return applied;
}
