import type { InvoiceRow } from "../../db/schema";

export interface InvoiceView {
  id: string;
  status: InvoiceRow["status"];
  subtotal: number;
  credits_applied: number;
  amount_due: number;
  amount_paid: number;
  currency: string;
  period_start: string;
  period_end: string;
  paid_at: string | null;
  hosted_invoice_url: string | null;
  created_at: string;
}

export interface InvoiceLineView {
  pod_name: string;
  plan_slug: string;
  days: number;
  amount: number;
}

export const toInvoiceView = (r: InvoiceRow): InvoiceView => ({
  id: r.id,
  status: r.status,
  subtotal: r.subtotal,
  credits_applied: r.creditsApplied ?? 0,
  amount_due: r.amountDue,
  amount_paid: r.amountPaid,
  currency: r.currency,
  period_start: r.periodStart,
  period_end: r.periodEnd,
  paid_at: r.paidAt,
  hosted_invoice_url: r.hostedInvoiceUrl,
  created_at: r.createdAt,
});
