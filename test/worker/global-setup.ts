import type { TestProject } from "vitest/node";
import { startRepohostDouble } from "../support/repohost";
import { startStripeDouble } from "../support/stripe";

/**
 * Starts the git host's REST double (test/support/repohost.ts) and Stripe's (test/support/stripe.ts)
 * for the workerd tests; their addresses become the Worker's GITHUB_API_BASE and STRIPE_API_BASE
 * (vitest.config.ts reads them from the environment).
 */
export default async function setup(_project: TestProject) {
  const [repohost, stripe] = await Promise.all([startRepohostDouble(), startStripeDouble()]);
  process.env.REPOHOST_DOUBLE_URL = repohost.url;
  process.env.STRIPE_DOUBLE_URL = stripe.url;
  return async () => {
    await Promise.all([repohost.close(), stripe.close()]);
  };
}
