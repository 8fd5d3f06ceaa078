import { and, desc, eq, inArray } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { invoiceLines, invoices } from "../../db/schema";
import type { ServiceContext } from "../context";
import { type BillingCall, requireBillingOwner, requireProcessor } from "./access";
import { chargeInvoice } from "./invoicing";
import { type InvoiceLineView, type InvoiceView, toInvoiceView } from "./views";

export async function listInvoices({ ctx, caller }: BillingCall<unknown>): Promise<InvoiceView[]> {
  const rows = await ctx.db
    .select()
    .from(invoices)
    .where(eq(invoices.teamId, caller.teamId))
    .orderBy(desc(invoices.periodEnd))
    .limit(500);
  return rows.map(toInvoiceView);
}

/** The invoices still to be paid (`open`), oldest first; `[]` when there are none. */
export async function listOpenInvoices({ ctx, caller }: BillingCall<unknown>): Promise<InvoiceView[]> {
  const rows = await ctx.db
    .select()
    .from(invoices)
    .where(and(eq(invoices.teamId, caller.teamId), inArray(invoices.status, ["open"])))
    .orderBy(invoices.periodEnd);
  return rows.map(toInvoiceView);
}

/** Another team's invoice is 403, as the spec has it (an unknown id is 404). */
async function teamInvoice(ctx: ServiceContext, teamId: string, invoiceId: string) {
  const [row] = await ctx.db.select().from(invoices).where(eq(invoices.id, invoiceId));
  if (!row) return fail("not_found", `invoice ${invoiceId} not found`);
  if (row.teamId !== teamId) return fail("forbidden", `invoice ${invoiceId} is not the active team's`);
  return ok(row);
}

export async function getInvoice({
  ctx,
  caller,
  input,
}: BillingCall<{ invoiceId: string }>): Promise<Result<InvoiceView & { lines: InvoiceLineView[] }>> {
  const found = await teamInvoice(ctx, caller.teamId, input.invoiceId);
  if (!found.ok) return found;
  const lines = await ctx.db
    .select()
    .from(invoiceLines)
    .where(eq(invoiceLines.invoiceId, found.value.id))
    .orderBy(invoiceLines.podName);
  return ok({
    ...toInvoiceView(found.value),
    lines: lines.map((l) => ({ pod_name: l.podName, plan_slug: l.planSlug, days: l.days, amount: l.amount })),
  });
}

/** Charges an open invoice to the default card now: 200 paid, or 400 saying why. */
export async function payInvoice({
  ctx,
  caller,
  input,
}: BillingCall<{ invoiceId: string }>): Promise<Result<InvoiceView>> {
  const found = await teamInvoice(ctx, caller.teamId, input.invoiceId);
  if (!found.ok) return found;
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const inv = found.value;
  if (inv.status === "paid") return ok(toInvoiceView(inv));
  if (inv.status !== "open") return fail("conflict", `invoice ${inv.id} is ${inv.status} and cannot be paid`);
  const stripe = requireProcessor(ctx);
  if (!stripe.ok) return stripe;
  const paid = await chargeInvoice(ctx, stripe.value, inv);
  return paid.ok ? ok(toInvoiceView(paid.value)) : paid;
}
