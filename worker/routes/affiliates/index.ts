import { createRouter } from "../../http/router";
// registers the hooks: churn on a referred team's cancel, and the commission, activation and tier
// upgrade on every paid invoice
import "../../services/affiliates/churn";
import "../../services/affiliates/commission";
import { registerGetAffiliateDashboard } from "./dashboard";
import { registerListAffiliateEarnings } from "./earnings";
import { registerEnrollAffiliate } from "./enroll";
import { registerListAffiliatePayouts } from "./payouts";
import { registerListAffiliateReferrals } from "./referrals";
import { registerUpdateAffiliateSettings } from "./settings";
import { registerRecordAffiliateVisit } from "./visit";

/**
 * The affiliate program (docs/affiliates.md), mounted at /api: /api/affiliates/* acts on the
 * caller's own record (404 `not enrolled` before enrolling); /api/affiliate/visit is public.
 */
export const affiliatesRouter = createRouter();

registerEnrollAffiliate(affiliatesRouter);
registerGetAffiliateDashboard(affiliatesRouter);
registerListAffiliateReferrals(affiliatesRouter);
registerListAffiliateEarnings(affiliatesRouter);
registerListAffiliatePayouts(affiliatesRouter);
registerUpdateAffiliateSettings(affiliatesRouter);
registerRecordAffiliateVisit(affiliatesRouter);
