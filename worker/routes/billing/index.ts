import { createRouter } from "../../http/router";
import { registerAddPaymentMethod } from "./add-payment-method";
import { registerCancelSubscription } from "./cancel";
import { registerChangeSubscriptionPlan } from "./change-plan";
import { registerListCredits } from "./credits";
import { registerDeletePaymentMethod } from "./delete-payment-method";
import { registerGetInvoice } from "./get-invoice";
import { registerGetBillingSubscription } from "./get-subscription";
import { registerListInvoices } from "./list-invoices";
import { registerListOpenInvoices } from "./list-open-invoices";
import { registerListOtherTeamsPaymentMethods } from "./list-other-teams-cards";
import { registerListPaymentMethods } from "./list-payment-methods";
import { registerPayInvoice } from "./pay-invoice";
import { registerResumeSubscription } from "./resume";
import { registerSetDefaultPaymentMethod } from "./set-default-payment-method";
import { registerCreateSetupIntent } from "./setup-intent";
import { registerSetupSession } from "./setup-session";
import { registerSubscribe } from "./subscribe";
import { registerGetUpcomingInvoice } from "./upcoming";
import { registerStripeWebhook } from "./webhooks";

/**
 * Billing per team (docs/billing.md), mounted at /api: /api/billing/* acts on the caller's active
 * team; /api/webhooks/stripe is Stripe's (public, signed). One file per operation; the order below
 * is the order of the OpenAPI document's paths (the fixed /invoices/open before /invoices/{id}).
 */
export const billingRouter = createRouter();

registerGetBillingSubscription(billingRouter);
registerSubscribe(billingRouter);
registerChangeSubscriptionPlan(billingRouter);
registerCancelSubscription(billingRouter);
registerResumeSubscription(billingRouter);
registerListInvoices(billingRouter);
registerListOpenInvoices(billingRouter);
registerGetInvoice(billingRouter);
registerPayInvoice(billingRouter);
registerListPaymentMethods(billingRouter);
registerListOtherTeamsPaymentMethods(billingRouter);
registerAddPaymentMethod(billingRouter);
registerSetDefaultPaymentMethod(billingRouter);
registerDeletePaymentMethod(billingRouter);
registerCreateSetupIntent(billingRouter);
registerSetupSession(billingRouter);
registerListCredits(billingRouter);
registerGetUpcomingInvoice(billingRouter);
registerStripeWebhook(billingRouter);
