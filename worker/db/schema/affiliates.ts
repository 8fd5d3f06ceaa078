import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** The affiliate program (migrations/0012_affiliates.sql, docs/affiliates.md). Money is integer cents. */

export const affiliates = sqliteTable("affiliates", {
  id: text("id").primaryKey(),
  userId: text("user_id").notNull().unique(),
  /** given at enrollment; keeps working after a custom slug is set */
  referralCode: text("referral_code").notNull().unique(),
  customSlug: text("custom_slug").unique(),
  tierSlug: text("tier_slug").notNull(),
  status: text("status", { enum: ["active"] }).notNull(),
  paypalEmail: text("paypal_email"),
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
});
export type AffiliateRow = typeof affiliates.$inferSelect;

/**
 * One row per counted click; its random id is the referral cookie's value (unguessable). Rows expire
 * with the cookie (30 days: the cron deletes older ones, worker/services/affiliates/visit.ts).
 */
export const affiliateVisits = sqliteTable(
  "affiliate_visits",
  {
    id: text("id").primaryKey(),
    affiliateId: text("affiliate_id").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("affiliate_visits_affiliate_idx").on(t.affiliateId),
    index("affiliate_visits_created_idx").on(t.createdAt),
  ],
);

export const REFERRAL_STATUSES = ["pending", "active", "churned"] as const;

export const referrals = sqliteTable(
  "referrals",
  {
    id: text("id").primaryKey(),
    affiliateId: text("affiliate_id").notNull(),
    /** a user is referred once, by the first affiliate whose link they signed up through */
    referredUserId: text("referred_user_id").notNull().unique(),
    /** the personal team made at sign-up: its invoices are the ones that earn */
    referredTeamId: text("referred_team_id").notNull(),
    status: text("status", { enum: REFERRAL_STATUSES }).notNull(),
    signedUpAt: text("signed_up_at").notNull(),
    activatedAt: text("activated_at"),
  },
  (t) => [
    index("referrals_affiliate_idx").on(t.affiliateId, t.signedUpAt),
    index("referrals_team_idx").on(t.referredTeamId),
  ],
);
export type ReferralRow = typeof referrals.$inferSelect;

export const EARNING_KINDS = ["commission", "bonus"] as const;

export const affiliateEarnings = sqliteTable(
  "affiliate_earnings",
  {
    id: text("id").primaryKey(),
    affiliateId: text("affiliate_id").notNull(),
    referralId: text("referral_id"),
    invoiceId: text("invoice_id"),
    kind: text("kind", { enum: EARNING_KINDS }).notNull(),
    /** what the referred team paid (0 for a bonus) */
    paymentAmount: integer("payment_amount").notNull(),
    /** integer percent, snapshotted at payment time */
    commissionRate: integer("commission_rate").notNull(),
    commissionAmount: integer("commission_amount").notNull(),
    tierSlug: text("tier_slug").notNull(),
    /** `commission:<invoice>` or `bonus:<affiliate>:<tier>`: each invoice earns once, each bonus is paid once */
    dedupeKey: text("dedupe_key").notNull().unique(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("affiliate_earnings_affiliate_idx").on(t.affiliateId, t.createdAt)],
);
export type EarningRow = typeof affiliateEarnings.$inferSelect;

/** Recorded by the operator (scripts/affiliate-payout.ts); never requested through the API. */
export const affiliatePayouts = sqliteTable(
  "affiliate_payouts",
  {
    id: text("id").primaryKey(),
    affiliateId: text("affiliate_id").notNull(),
    amount: integer("amount").notNull(),
    method: text("method").notNull(),
    status: text("status").notNull(),
    reference: text("reference"),
    note: text("note"),
    paidAt: text("paid_at").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("affiliate_payouts_affiliate_idx").on(t.affiliateId, t.paidAt)],
);
export type PayoutRow = typeof affiliatePayouts.$inferSelect;
