import Stripe from "stripe";
import type { Bindings } from "../../env";

/**
 * The payment processor's client, or null when no STRIPE_SECRET_KEY is configured (the local
 * default: billing enforcement is off and nothing is sent anywhere). The SDK runs on the Worker's
 * fetch; STRIPE_API_BASE points it at another host (the tests' double), Stripe's own otherwise.
 */
export function stripeClient(env: Bindings): Stripe | null {
  if (!env.STRIPE_SECRET_KEY) return null;
  const base = env.STRIPE_API_BASE ? new URL(env.STRIPE_API_BASE) : undefined;
  return new Stripe(env.STRIPE_SECRET_KEY, {
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 2,
    ...(base
      ? {
          host: base.hostname,
          port: base.port || (base.protocol === "http:" ? "80" : "443"),
          protocol: base.protocol === "http:" ? "http" : "https",
        }
      : {}),
  });
}

export const processorName = (env: Bindings): "stripe" | "none" =>
  env.STRIPE_SECRET_KEY ? "stripe" : "none";

/** An error Stripe answered (a declined card, a bad id), as opposed to one that never reached it. */
export const isProcessorAnswer = (error: unknown): error is Stripe.errors.StripeError =>
  error instanceof Stripe.errors.StripeError &&
  !(error instanceof Stripe.errors.StripeConnectionError) &&
  !(error instanceof Stripe.errors.StripeAPIError);

export type { Stripe };
