import { fail, ok, type Result } from "../../../shared/errors";
import { type BillingCall, requireBillingOwner, requireProcessor } from "./access";
import { customerOf, ensureCustomer } from "./customers";
import { type PaymentMethodView, recordPaymentMethod, setDefaultPaymentMethod } from "./payment-methods";
import { isProcessorAnswer, type Stripe } from "./stripe";

/** Where Stripe's hosted page sends the browser back: the dashboard's return handler, and billing. */
export const SETUP_RETURN_PATH = "/app/billing/card-added";
const CANCEL_PATH = "/app/billing?card=cancelled";

/** A Stripe session id as Stripe spells them (`cs_test_…`, `cs_live_…`): nothing else is sent on. */
export const SESSION_ID = /^cs_[A-Za-z0-9_]{1,250}$/;

/**
 * `POST /api/billing/setup-session`: a Stripe Checkout Session in `setup` mode for the team's
 * customer. The browser goes to its `url` (Stripe's hosted page: the card is typed there, never on
 * this origin), and Stripe sends it back to `success_url` with the session's id, where
 * `completeSetupSession` records the card.
 */
export async function createSetupSession({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<Result<{ id: string; url: string }>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const stripe = requireProcessor(ctx);
  if (!stripe.ok) return stripe;
  const customer = await ensureCustomer(ctx, stripe.value, caller.teamId);
  const base = ctx.env.PUBLIC_URL.replace(/\/+$/, "");
  const session = await stripe.value.checkout.sessions.create({
    mode: "setup",
    customer,
    currency: "usd",
    // Stripe fills {CHECKOUT_SESSION_ID} itself; it must reach the URL unencoded.
    success_url: `${base}${SETUP_RETURN_PATH}?session_id={CHECKOUT_SESSION_ID}`,
    cancel_url: `${base}${CANCEL_PATH}`,
    metadata: { team_id: caller.teamId },
  });
  if (!session.url) return fail("unavailable", "the payment processor gave no page for the session");
  return ok({ id: session.id, url: session.url });
}

const idOf = (value: string | { id: string } | null | undefined) =>
  typeof value === "string" ? value : (value?.id ?? null);

/**
 * The hosted page's return: reads the session back from Stripe (never trusting the browser's word
 * for anything but its id), checks it is this team's customer's and complete, then records the card
 * its setup intent saved and makes it the team's default. Completing the same session twice answers
 * the same card.
 */
export async function completeSetupSession({
  ctx,
  caller,
  input,
}: BillingCall<{ session_id: string }>): Promise<Result<PaymentMethodView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const stripe = requireProcessor(ctx);
  if (!stripe.ok) return stripe;
  if (!SESSION_ID.test(input.session_id)) return fail("bad_request", "session_id: not a Stripe session id");
  // No customer yet: the team never made a session, so this one cannot be its.
  const customer = await customerOf(ctx, caller.teamId);
  const notOurs = fail("not_found", `setup session ${input.session_id} not found for this team`);
  if (!customer) return notOurs;
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.value.checkout.sessions.retrieve(input.session_id, { expand: ["setup_intent"] });
  } catch (error) {
    if (isProcessorAnswer(error)) return notOurs;
    throw error;
  }
  if (session.mode !== "setup" || idOf(session.customer) !== customer) return notOurs;
  const intent = typeof session.setup_intent === "object" ? session.setup_intent : null;
  if (session.status !== "complete" || intent?.status !== "succeeded")
    return fail("conflict", "the card was not saved at Stripe yet: finish the setup page first");
  const pmId = idOf(intent.payment_method);
  if (!pmId) return fail("conflict", "the setup session saved no card");
  const recorded = await recordPaymentMethod({
    ctx,
    caller,
    input: { processor_payment_method_id: pmId, attached: true },
  });
  if (!recorded.ok || recorded.value.is_default) return recorded;
  return setDefaultPaymentMethod({ ctx, caller, input: { payment_method_id: recorded.value.id } });
}
