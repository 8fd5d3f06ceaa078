import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import type { BillingCall } from "../../services/billing/access";
import { listCredits } from "../../services/billing/credits";
import { listInvoices } from "../../services/billing/invoices";
import { listPaymentMethods } from "../../services/billing/payment-methods";
import { getSubscription } from "../../services/billing/subscriptions";
import { getUpcoming } from "../../services/billing/upcoming";
import { getTeam } from "../../services/teams/teams";
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
    />,
  );
});
