import { fail, ok, type Result } from "../../../shared/errors";
import type { Caller } from "../auth/caller";
import type { ServiceContext } from "../context";
import { requireOwner } from "../teams/access";
import { type Stripe, stripeClient } from "./stripe";

/** What a billing verb receives: the caller (the active team is theirs) and the request's input. */
export interface BillingCall<I> {
  ctx: ServiceContext;
  caller: Caller;
  input: I;
}

/** Changes to a team's billing (cards, subscription, paying) are the owner's, as every team mutation. */
export async function requireBillingOwner(ctx: ServiceContext, caller: Caller): Promise<Result<null>> {
  const owner = await requireOwner(ctx.db, caller.teamId, caller.user.id);
  return owner.ok ? ok(null) : owner;
}

/** The processor's client, or a clear refusal when none is configured. */
export function requireProcessor(ctx: ServiceContext): Result<Stripe> {
  const stripe = stripeClient(ctx.env);
  return stripe
    ? ok(stripe)
    : fail("bad_request", "no payment processor is configured (STRIPE_SECRET_KEY unset): billing is off");
}
