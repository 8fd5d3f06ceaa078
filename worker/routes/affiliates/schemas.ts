import { z } from "@hono/zod-openapi";
import { EARNING_KINDS, REFERRAL_STATUSES } from "../../db/schema";

/** Schemas the affiliate routes share (docs/affiliates.md). Money is integer cents; rates integer percents. */

export const tags = ["Affiliates"];

const Cents = z.number().int();

export const Affiliate = z
  .object({
    id: z.string(),
    user_id: z.string(),
    referral_code: z.string(),
    custom_slug: z.string().nullable(),
    paypal_email: z.string().nullable(),
    tier_slug: z.string(),
    status: z.string(),
    total_revenue: Cents.openapi({ description: "what the referred teams paid" }),
    total_earnings: Cents.openapi({ description: "commissions and bonuses" }),
    total_paid_out: Cents,
    referral_count: z.number().int(),
    created_at: z.string(),
  })
  .openapi("Affiliate");

const TierInfo = z.object({
  slug: z.string(),
  name: z.string(),
  commission_rate: z.number().int().openapi({ description: "integer percent" }),
});

export const Dashboard = z
  .object({
    affiliate: Affiliate,
    tier: TierInfo,
    next_tier: TierInfo.extend({ milestone_amount: Cents, bonus_amount: Cents })
      .optional()
      .openapi({ description: "absent on the top tier (and before a tier given by arrangement)" }),
    progress_pct: z.number().int().min(0).max(100),
    pending_balance: Cents.openapi({ description: "earned and not yet paid out" }),
    referral_link: z.string(),
    referral_link_alt: z.string(),
    visit_count: z.number().int(),
  })
  .openapi("AffiliateDashboard");

export const Referral = z
  .object({
    id: z.string(),
    affiliate_id: z.string(),
    referred_user: z.string(),
    status: z.enum(REFERRAL_STATUSES),
    signed_up_at: z.string(),
    activated_at: z.string().nullable(),
    email: z
      .string()
      .openapi({ description: "masked: first character and domain", example: "a***@example.com" }),
    pod_count: z.number().int(),
    plan_slug: z.string().nullable(),
    subscription_status: z.string().nullable(),
  })
  .openapi("Referral");

export const Earning = z
  .object({
    id: z.string(),
    affiliate_id: z.string(),
    referral_id: z.string().nullable(),
    invoice_id: z.string().nullable(),
    kind: z.enum(EARNING_KINDS),
    payment_amount: Cents,
    commission_rate: z.number().int().openapi({ description: "integer percent at payment time" }),
    commission_amount: Cents,
    tier_slug: z.string(),
    created_at: z.string(),
  })
  .openapi("AffiliateEarning");

export const Payout = z
  .object({
    id: z.string(),
    affiliate_id: z.string(),
    amount: Cents,
    method: z.string(),
    status: z.string(),
    reference: z.string().nullable(),
    note: z.string().nullable(),
    paid_at: z.string(),
    created_at: z.string(),
  })
  .openapi("AffiliatePayout");

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const paged = <T extends z.ZodType>(key: string, item: T) =>
  z.object({
    [key]: z.array(item),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
  });
