import { eq } from "drizzle-orm";
import Stripe from "stripe";
import { fail, ok, type Result } from "../../../shared/errors";
import { billingWebhookEvents, invoices, paymentMethods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { markInvoicePaid } from "./invoice-paid";
import { forgetPaymentMethod } from "./payment-methods";
import { stripeClient } from "./stripe";
import { markPastDue } from "./subscriptions";

/**
 * Stripe's webhooks. The signature (Stripe-Signature over the exact body, STRIPE_WEBHOOK_SECRET,
 * SubtleCrypto) is the authentication; an event id already applied is answered and ignored.
 *
 * Events arrive late, twice and out of order, so none is applied from its payload alone: the
 * object it names is read back from Stripe and its current state applied (an invoice that is paid
 * now is paid here, whatever order `invoice.payment_failed` and `invoice.paid` came in; a card's
 * expiry is the card's now). Applying is idempotent; the id is recorded after, so a failure
 * midway is retried by Stripe's redelivery.
 */

export type WebhookAnswer = { status: "processed" | "ignored" | "duplicate"; event_id: string };

const cryptoProvider = Stripe.createSubtleCryptoProvider();

export async function receiveStripeEvent(
  ctx: ServiceContext,
  input: { body: string; signature: string | undefined },
): Promise<Result<WebhookAnswer>> {
  const stripe = stripeClient(ctx.env);
  const secret = ctx.env.STRIPE_WEBHOOK_SECRET;
  if (!stripe || !secret) return fail("bad_request", "billing webhooks are not configured on this service");
  if (!input.signature) return fail("bad_request", "Stripe-Signature header missing");
  let event: Stripe.Event;
  try {
    event = await stripe.webhooks.constructEventAsync(
      input.body,
      input.signature,
      secret,
      undefined,
      cryptoProvider,
    );
  } catch (error) {
    if (error instanceof Stripe.errors.StripeSignatureVerificationError)
      return fail(
        "bad_request",
        "invalid Stripe-Signature: the event was not signed with this endpoint's secret",
      );
    return fail("bad_request", "the body is not a Stripe event");
  }
  const [seen] = await ctx.db
    .select({ id: billingWebhookEvents.id })
    .from(billingWebhookEvents)
    .where(eq(billingWebhookEvents.id, event.id));
  if (seen) return ok({ status: "duplicate", event_id: event.id });
  const applied = await applyEvent(ctx, stripe, event);
  await ctx.db
    .insert(billingWebhookEvents)
    .values({ id: event.id, type: event.type, receivedAt: nowIso() })
    .onConflictDoNothing();
  return ok({ status: applied ? "processed" : "ignored", event_id: event.id });
}

async function applyEvent(ctx: ServiceContext, stripe: Stripe, event: Stripe.Event): Promise<boolean> {
  switch (event.type) {
    case "invoice.paid":
    case "invoice.payment_succeeded":
    case "invoice.payment_failed": {
      const processorId = event.data.object.id;
      if (!processorId) return false;
      const [local] = await ctx.db
        .select()
        .from(invoices)
        .where(eq(invoices.processorInvoiceId, processorId));
      if (!local) return false;
      const current = await stripe.invoices.retrieve(processorId);
      if (current.status === "paid") {
        const paidAt = current.status_transitions?.paid_at;
        // false when it was paid here already: a later or replayed event changes nothing
        return markInvoicePaid(
          ctx,
          local.id,
          current.amount_paid,
          paidAt ? new Date(paidAt * 1000).toISOString() : nowIso(),
        );
      }
      if (event.type === "invoice.payment_failed" && current.status === "open") {
        await markPastDue(ctx, local.teamId);
        return true;
      }
      return false;
    }
    case "payment_method.updated":
    case "payment_method.automatically_updated":
    case "payment_method.detached": {
      const [local] = await ctx.db
        .select()
        .from(paymentMethods)
        .where(eq(paymentMethods.processorPaymentMethodId, event.data.object.id));
      if (!local) return false;
      const current = await stripe.paymentMethods.retrieve(local.processorPaymentMethodId);
      if (!current.customer) {
        await forgetPaymentMethod(ctx, local);
        return true;
      }
      await ctx.db
        .update(paymentMethods)
        .set({
          cardBrand: current.card?.brand ?? local.cardBrand,
          cardLast4: current.card?.last4 ?? local.cardLast4,
          cardExpMonth: current.card?.exp_month ?? local.cardExpMonth,
          cardExpYear: current.card?.exp_year ?? local.cardExpYear,
        })
        .where(eq(paymentMethods.id, local.id));
      return true;
    }
    default:
      // customer.subscription.* and payment_method.attached: the service keeps no Stripe
      // subscription (pods are charged per day through invoices) and records cards when it attaches them.
      return false;
  }
}
