import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Billing per team (migrations/0011_billing.sql, docs/billing.md). Money is integer cents. */

export const billingCustomers = sqliteTable("billing_customers", {
  teamId: text("team_id").primaryKey(),
  processorCustomerId: text("processor_customer_id").notNull().unique(),
  createdAt: text("created_at").notNull(),
});

export const paymentMethods = sqliteTable(
  "payment_methods",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    processorPaymentMethodId: text("processor_payment_method_id").notNull().unique(),
    type: text("type").notNull(),
    cardBrand: text("card_brand"),
    cardLast4: text("card_last4"),
    cardExpMonth: integer("card_exp_month"),
    cardExpYear: integer("card_exp_year"),
    isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
    /** the user who added it: "your cards on your other teams" */
    addedBy: text("added_by").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("payment_methods_team_idx").on(t.teamId),
    index("payment_methods_added_by_idx").on(t.addedBy),
  ],
);
export type PaymentMethodRow = typeof paymentMethods.$inferSelect;

export const SUBSCRIPTION_STATUSES = ["active", "cancelled", "past_due", "suspended", "trialing"] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const subscriptions = sqliteTable(
  "subscriptions",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull().unique(),
    planSlug: text("plan_slug").notNull(),
    status: text("status", { enum: SUBSCRIPTION_STATUSES }).notNull(),
    /** when a payment first failed: the grace period to `suspended` runs from here */
    pastDueSince: text("past_due_since"),
    cancelledAt: text("cancelled_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("subscriptions_status_idx").on(t.status, t.pastDueSince)],
);
export type SubscriptionRow = typeof subscriptions.$inferSelect;

export const podCharges = sqliteTable(
  "pod_charges",
  {
    teamId: text("team_id").notNull(),
    podId: text("pod_id").notNull(),
    /** the UTC day charged, YYYY-MM-DD */
    day: text("day").notNull(),
    podName: text("pod_name").notNull(),
    planSlug: text("plan_slug").notNull(),
    amount: integer("amount").notNull(),
    invoiceId: text("invoice_id"),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.podId, t.day] }),
    index("pod_charges_uninvoiced_idx").on(t.invoiceId, t.teamId, t.day),
  ],
);

export const INVOICE_STATUSES = ["draft", "open", "paid", "void", "uncollectible"] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

export const invoices = sqliteTable(
  "invoices",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    processorInvoiceId: text("processor_invoice_id").unique(),
    status: text("status", { enum: INVOICE_STATUSES }).notNull(),
    subtotal: integer("subtotal").notNull().default(0),
    /** null until credits were applied (once per invoice) */
    creditsApplied: integer("credits_applied"),
    amountDue: integer("amount_due").notNull().default(0),
    amountPaid: integer("amount_paid").notNull().default(0),
    currency: text("currency").notNull().default("usd"),
    periodStart: text("period_start").notNull(),
    periodEnd: text("period_end").notNull(),
    hostedInvoiceUrl: text("hosted_invoice_url"),
    paidAt: text("paid_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("invoices_team_period_idx").on(t.teamId, t.periodEnd),
    index("invoices_status_idx").on(t.status),
  ],
);
export type InvoiceRow = typeof invoices.$inferSelect;

export const invoiceLines = sqliteTable(
  "invoice_lines",
  {
    id: text("id").primaryKey(),
    invoiceId: text("invoice_id").notNull(),
    podId: text("pod_id").notNull(),
    podName: text("pod_name").notNull(),
    planSlug: text("plan_slug").notNull(),
    days: integer("days").notNull(),
    amount: integer("amount").notNull(),
  },
  (t) => [index("invoice_lines_invoice_idx").on(t.invoiceId)],
);

export const CREDIT_TYPES = ["promo", "bonus", "refund"] as const;
export type CreditType = (typeof CREDIT_TYPES)[number];

export const credits = sqliteTable(
  "credits",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    amount: integer("amount").notNull(),
    remaining: integer("remaining").notNull(),
    type: text("type", { enum: CREDIT_TYPES }).notNull(),
    reason: text("reason").notNull().default(""),
    expiresAt: text("expires_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("credits_team_idx").on(t.teamId)],
);
export type CreditRow = typeof credits.$inferSelect;

export const creditApplications = sqliteTable(
  "credit_applications",
  {
    invoiceId: text("invoice_id").notNull(),
    creditId: text("credit_id").notNull(),
    amount: integer("amount").notNull(),
  },
  (t) => [primaryKey({ columns: [t.invoiceId, t.creditId] })],
);

export const billingWebhookEvents = sqliteTable("billing_webhook_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  receivedAt: text("received_at").notNull(),
});

export const billingJobCursors = sqliteTable("billing_job_cursors", {
  job: text("job").primaryKey(),
  day: text("day").notNull(),
  cursor: text("cursor").notNull(),
  done: integer("done", { mode: "boolean" }).notNull().default(false),
});
