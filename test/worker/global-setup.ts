import type { TestProject } from "vitest/node";
import { startCloudflareDouble } from "../support/cloudflare";
import { startDnsDouble } from "../support/dns";
import { startImportSiteDouble } from "../support/import-site";
import { startMailApiDouble } from "../support/mail-api";
import { startRepohostDouble } from "../support/repohost";
import { startStripeDouble } from "../support/stripe";
import { startWebhookReceiver } from "../support/webhook-receiver";

/**
 * Starts the git host's REST double (test/support/repohost.ts), Stripe's (test/support/stripe.ts)
 * a DNS-over-HTTPS resolver's (test/support/dns.ts) and Resend's (test/support/mail-api.ts) for the
 * workerd tests; their addresses become the Worker's GITHUB_API_BASE, STRIPE_API_BASE,
 * DNS_RESOLVER_URL and MAIL_API_BASE (vitest.config.ts reads them from the environment), and
 * Cloudflare's custom hostnames double (test/support/cloudflare.ts) is CLOUDFLARE_API_BASE. A webhook
 * receiver (test/support/webhook-receiver.ts) takes alert deliveries: its address is WEBHOOK_RECEIVER_URL.
 */
export default async function setup(_project: TestProject) {
  const [repohost, stripe, dns, importSite, mailApi, receiver, cloudflare] = await Promise.all([
    startRepohostDouble(),
    startStripeDouble(),
    startDnsDouble(),
    startImportSiteDouble(),
    startMailApiDouble(),
    startWebhookReceiver(),
    startCloudflareDouble(),
  ]);
  process.env.CLOUDFLARE_DOUBLE_URL = cloudflare.url;
  process.env.WEBHOOK_RECEIVER_URL = receiver.url;
  process.env.MAIL_API_DOUBLE_URL = mailApi.url;
  process.env.IMPORT_SITE_DOUBLE_URL = importSite.url;
  process.env.REPOHOST_DOUBLE_URL = repohost.url;
  process.env.STRIPE_DOUBLE_URL = stripe.url;
  process.env.DNS_DOUBLE_URL = dns.resolverUrl;
  return async () => {
    await Promise.all([
      repohost.close(),
      stripe.close(),
      dns.close(),
      importSite.close(),
      mailApi.close(),
      receiver.close(),
      cloudflare.close(),
    ]);
  };
}
