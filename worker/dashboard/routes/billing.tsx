import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { statusOfErrorCode } from "../../../shared/errors";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import type { BillingCall } from "../../services/billing/access";
import { listCredits } from "../../services/billing/credits";
import { listInvoices } from "../../services/billing/invoices";
import { listPaymentMethods } from "../../services/billing/payment-methods";
import { completeSetupSession } from "../../services/billing/setup-sessions";
import { getSubscription } from "../../services/billing/subscriptions";
import { getUpcoming } from "../../services/billing/upcoming";
import { getTeam } from "../../services/teams/teams";
import { ErrorPage } from "../components/error-page";
import { pageContext } from "../layout";
import { BillingPage } from "../pages/billing";
import { requireSignedIn } from "../session";

/** The active team's billing: subscription, upcoming charges, invoices, cards and credits. */
export const billingPages = new Hono<AppEnv>();

billingPages.get("/billing", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const call: BillingCall<unknown> = { ctx: page.ctx, caller: page.caller, input: {} };
  const [team, subscription, upcoming, invoices, methods, credits] = await Promise.all([
    getTeam(page.ctx, page.caller.user.id, page.caller.teamId),
    getSubscription(call),
    getUpcoming(call),
    listInvoices(call),
    listPaymentMethods(call),
    listCredits(call),
  ]);
  return c.html(
    <BillingPage
      page={page}
      team={unwrap(team)}
      subscription={subscription}
      upcoming={upcoming}
      invoices={invoices}
      methods={methods}
      credits={credits}
      card={CARD_NOTICES.find((n) => n === c.req.query("card"))}
    />,
  );
});

/** The notices the billing page shows after Stripe's hosted page: a fixed set, never the URL's text. */
const CARD_NOTICES = ["added", "cancelled"] as const;

/**
 * Stripe's hosted setup page sends the browser back here (the setup session's success_url,
 * docs/billing.md "Adding a card on Stripe's page"). The session is read back from Stripe and must be
 * the signed-in user's team customer's: another team's session id is a 404 page, and nothing is
 * recorded. Then to the billing page with a notice.
 */
billingPages.get("/billing/card-added", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const done = await completeSetupSession({
    ctx: page.ctx,
    caller: page.caller,
    input: { session_id: c.req.query("session_id") ?? "" },
  });
  if (!done.ok) {
    const status = statusOfErrorCode[done.code] as ContentfulStatusCode;
    return c.html(<ErrorPage status={status} message={done.message} />, status);
  }
  return c.redirect("/app/billing?card=added", 303);
});
