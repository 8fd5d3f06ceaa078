import { z } from "@hono/zod-openapi";
import { PLAN_SLUGS } from "../../../shared/catalog";
import { CREDIT_TYPES, INVOICE_STATUSES, SUBSCRIPTION_STATUSES } from "../../db/schema";

/** Schemas the billing routes share (docs/billing.md). Money is integer cents. */

export const tags = ["Billing"];

const Cents = z.number().int();

export const PlanSlugBody = z.object({
  plan_slug: z
    .string()
    .min(1)
    .max(40)
    .openapi({ description: `one of ${PLAN_SLUGS.join(", ")}`, example: "build" }),
});

export const Subscription = z
  .object({
    id: z.string().nullable().openapi({ description: "null until the team subscribes" }),
    team_id: z.string(),
    plan_slug: z.string().nullable(),
    status: z.enum([...SUBSCRIPTION_STATUSES, "none"]).openapi({ description: "`none`: never subscribed" }),
    current_period_start: z.string(),
    current_period_end: z.string(),
    created_at: z.string().nullable(),
    processor: z
      .enum(["stripe", "none"])
      .openapi({ description: "`none`: no STRIPE_SECRET_KEY configured; billing enforcement (402) is off" }),
  })
  .openapi("Subscription");

export const Invoice = z
  .object({
    id: z.string(),
    status: z.enum(INVOICE_STATUSES),
    subtotal: Cents,
    credits_applied: Cents,
    amount_due: Cents,
    amount_paid: Cents,
    currency: z.string(),
    period_start: z.string(),
    period_end: z.string(),
    paid_at: z.string().nullable(),
    hosted_invoice_url: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("Invoice");

export const InvoiceDetail = Invoice.extend({
  lines: z.array(
    z.object({ pod_name: z.string(), plan_slug: z.string(), days: z.number().int(), amount: Cents }),
  ),
}).openapi("InvoiceDetail");

export const PaymentMethod = z
  .object({
    id: z.string(),
    type: z.string(),
    card_brand: z.string().nullable(),
    card_last4: z.string().nullable(),
    card_exp_month: z.number().int().nullable(),
    card_exp_year: z.number().int().nullable(),
    is_default: z.boolean(),
    created_at: z.string(),
  })
  .openapi("PaymentMethod");

export const OtherTeamCard = PaymentMethod.extend({ team_id: z.string(), team_name: z.string() }).openapi(
  "OtherTeamPaymentMethod",
);

export const Credit = z
  .object({
    id: z.string(),
    amount: Cents,
    remaining: Cents,
    type: z.enum(CREDIT_TYPES),
    reason: z.string(),
    expires_at: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("Credit");

export const UpcomingCharge = z
  .object({
    pod_name: z.string(),
    pod_status: z.string(),
    plan_slug: z.string(),
    plan_name: z.string(),
    monthly_rate: Cents,
    daily_rate: Cents,
    active_days: z.number().int(),
    amount: Cents,
  })
  .openapi("UpcomingCharge");

export const Upcoming = z
  .object({
    charges: z.array(UpcomingCharge),
    subtotal: Cents,
    credits_available: Cents,
    estimated_total: Cents,
    period_start: z.string(),
    period_end: z.string(),
  })
  .openapi("UpcomingInvoice");

const idParam = (name: string) =>
  z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name, in: "path" } });

export const InvoiceParams = z.object({ invoiceId: idParam("invoiceId") });
export const PaymentMethodParams = z.object({ pmId: idParam("pmId") });
