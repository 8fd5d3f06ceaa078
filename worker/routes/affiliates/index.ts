import { createRouter } from "../../http/router";
// the commission, activation and tier upgrade run on every paid invoice (registers the hook)
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
