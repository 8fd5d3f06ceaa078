import { and, eq, ne } from "drizzle-orm";
import { invoices } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";

/**
 * What follows an invoice's payment, once per invoice (the affiliate commission is one): called
 * only by the one caller whose conditional update moved the invoice to `paid`.
 */
export type PaidInvoiceHook = (
  ctx: ServiceContext,
  invoice: { id: string; teamId: string; amountPaid: number },
) => Promise<void>;

const hooks: PaidInvoiceHook[] = [];
export const onInvoicePaid = (hook: PaidInvoiceHook) => {
  hooks.push(hook);
};

/**
 * Marks a local invoice paid (from the pay call's answer or a webhook, whichever comes first) and
 * runs the paid hooks when this call made the move. Returns whether it did.
 */
export async function markInvoicePaid(
  ctx: ServiceContext,
  invoiceId: string,
  amountPaid: number,
  paidAt = nowIso(),
): Promise<boolean> {
  const moved = await ctx.db
    .update(invoices)
    .set({ status: "paid", amountPaid, paidAt, updatedAt: nowIso() })
    .where(and(eq(invoices.id, invoiceId), ne(invoices.status, "paid")))
    .returning({ id: invoices.id, teamId: invoices.teamId });
  const row = moved[0];
  if (!row) return false;
  for (const hook of hooks) await hook(ctx, { id: row.id, teamId: row.teamId, amountPaid });
  return true;
}
