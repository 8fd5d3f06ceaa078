import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import type { AffiliateCall, Page } from "../../services/affiliates/access";
import { getDashboard } from "../../services/affiliates/dashboard";
import { listEarnings, listPayouts, listReferrals } from "../../services/affiliates/lists";
import { pageContext } from "../layout";
import { AffiliatesPage } from "../pages/affiliates";
import { requireSignedIn } from "../session";

/** The newest rows of each list: the API pages further (`limit`, `offset`). */
const FIRST_PAGE: Page = { limit: 50, offset: 0 };

/** The signed-in user's affiliate account: enroll, the link, tier progress, the lists, settings. */
export const affiliatesPages = new Hono<AppEnv>();

affiliatesPages.get("/affiliates", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const call: AffiliateCall<Page> = { ctx: page.ctx, caller: page.caller, input: FIRST_PAGE };
  const dashboard = await getDashboard(call);
  if (!dashboard.ok) {
    // not enrolled (the only refusal of a signed-in caller): the page offers to enroll
    if (dashboard.code !== "not_found") unwrap(dashboard);
    return c.html(<AffiliatesPage page={page} enrolled={null} />);
  }
  const [referrals, earnings, payouts] = await Promise.all([
    listReferrals(call),
    listEarnings(call),
    listPayouts(call),
  ]);
  return c.html(
    <AffiliatesPage
      page={page}
      enrolled={{
        dashboard: dashboard.value,
        referrals: unwrap(referrals),
        earnings: unwrap(earnings),
        payouts: unwrap(payouts),
      }}
    />,
  );
});
