import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { runScheduledJobs, scheduledJobs } from "../../../worker/scheduled";
import { STRIPE_DOUBLE_KEY, STRIPE_DOUBLE_WEBHOOK_SECRET } from "../../support/stripe";
import { type CallOptions, call, type TestUser } from "./client";

/**
 * Billing with the processor on: the Stripe double (test/support/stripe.ts, started by
 * global-setup) is STRIPE_API_BASE for every test, but only these helpers send a key, per request,
 * so every other test keeps running with enforcement off.
 */
export const billingEnv = {
  STRIPE_SECRET_KEY: STRIPE_DOUBLE_KEY,
  STRIPE_WEBHOOK_SECRET: STRIPE_DOUBLE_WEBHOOK_SECRET,
} satisfies Partial<Cloudflare.Env>;

const stripeBase = () => env.STRIPE_API_BASE ?? "";

export const billed = (user: TestUser, extra: CallOptions = {}): CallOptions => ({
  token: user.token,
  env: billingEnv,
  ...extra,
});

/** What Stripe.js does in the browser: a card from a test token, made at Stripe (the double). */
export async function stripeCard(
  token: "tok_visa" | "tok_mastercard" | "tok_chargeDeclined",
): Promise<string> {
  const res = await fetch(`${stripeBase()}/v1/payment_methods`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${STRIPE_DOUBLE_KEY}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ type: "card", "card[token]": token }),
  });
  const body = (await res.json()) as { id: string };
  expect(res.status).toBe(200);
  return body.id;
}

/** A card added to the user's active team through the API. */
export async function addCard(user: TestUser, token: Parameters<typeof stripeCard>[0] = "tok_visa") {
  const pm = await stripeCard(token);
  const res = await call(
    "POST",
    "/api/billing/payment-methods",
    { processor_payment_method_id: pm },
    billed(user),
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { ...res.body, processorId: pm } as { id: string; is_default: boolean; processorId: string };
}

export interface Delivery {
  seq: number;
  event_id: string;
  type: string;
  payload: string;
  signature: string;
}

/** The signed webhook deliveries the double queued after `after`. */
export async function deliveries(after = 0): Promise<Delivery[]> {
  const res = await fetch(`${stripeBase()}/__double/deliveries?after=${after}`);
  return ((await res.json()) as { deliveries: Delivery[] }).deliveries;
}

export const lastDeliverySeq = async () => (await deliveries()).at(-1)?.seq ?? 0;

/** Posts one delivery to the Worker's webhook as Stripe would. */
export const deliver = (d: Pick<Delivery, "payload" | "signature">) =>
  call("POST", "/api/webhooks/stripe", undefined, {
    raw: d.payload,
    env: billingEnv,
    headers: { "stripe-signature": d.signature },
  });

/** The cron's billing job at a simulated instant, with the processor on. */
export const runBillingAt = (now: number) =>
  runScheduledJobs(
    { ...env, ...billingEnv },
    now,
    scheduledJobs.filter((j) => j.name === "billing"),
  );

export async function insertCredit(teamId: string, amount: number, expiresAt: string | null, type = "promo") {
  const id = `cr_${crypto.randomUUID().slice(0, 12)}`;
  await env.DB.prepare(
    "INSERT INTO credits (id, team_id, amount, remaining, type, reason, expires_at, created_at) VALUES (?, ?, ?, ?, ?, 'test', ?, ?)",
  )
    .bind(id, teamId, amount, amount, type, expiresAt, new Date().toISOString())
    .run();
  return id;
}
