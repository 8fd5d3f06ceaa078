import { and, desc, eq, exists, inArray, ne, notExists, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { type PaymentMethodRow, paymentMethods, pods, teamMembers, teams } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { type BillingCall, requireBillingOwner, requireProcessor } from "./access";
import { ensureCustomer } from "./customers";
import { creditsCoverPeriod, liveTeamPods } from "./estimate";
import { isProcessorAnswer } from "./stripe";

export interface PaymentMethodView {
  id: string;
  type: string;
  card_brand: string | null;
  card_last4: string | null;
  card_exp_month: number | null;
  card_exp_year: number | null;
  is_default: boolean;
  created_at: string;
}

export const toPaymentMethodView = (r: PaymentMethodRow): PaymentMethodView => ({
  id: r.id,
  type: r.type,
  card_brand: r.cardBrand,
  card_last4: r.cardLast4,
  card_exp_month: r.cardExpMonth,
  card_exp_year: r.cardExpYear,
  is_default: r.isDefault,
  created_at: r.createdAt,
});

const teamMethods = (ctx: ServiceContext, teamId: string) =>
  ctx.db
    .select()
    .from(paymentMethods)
    .where(eq(paymentMethods.teamId, teamId))
    .orderBy(desc(paymentMethods.isDefault), desc(paymentMethods.createdAt));

export async function listPaymentMethods({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<PaymentMethodView[]> {
  return (await teamMethods(ctx, caller.teamId)).map(toPaymentMethodView);
}

export async function defaultPaymentMethod(ctx: ServiceContext, teamId: string) {
  const [row] = await ctx.db
    .select()
    .from(paymentMethods)
    .where(and(eq(paymentMethods.teamId, teamId), eq(paymentMethods.isDefault, true)))
    .limit(1);
  return row ?? null;
}

/** `POST /api/billing/setup-intent`: the browser confirms a card against it (Stripe.js). */
export async function createSetupIntent({
  ctx,
  caller,
}: BillingCall<unknown>): Promise<Result<{ client_secret: string }>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const stripe = requireProcessor(ctx);
  if (!stripe.ok) return stripe;
  const customer = await ensureCustomer(ctx, stripe.value, caller.teamId);
  const intent = await stripe.value.setupIntents.create({
    customer,
    usage: "off_session",
  });
  if (!intent.client_secret) return fail("unavailable", "the payment processor gave no client secret");
  return ok({ client_secret: intent.client_secret });
}

/**
 * Attaches a card the browser made at Stripe to the team's customer and keeps what Stripe says of it
 * (brand, last four digits, expiry: never what the client claims). The team's first card is its default.
 */
export async function addPaymentMethod(
  call: BillingCall<{ processor_payment_method_id: string }>,
): Promise<Result<PaymentMethodView>> {
  const owner = await requireBillingOwner(call.ctx, call.caller);
  if (!owner.ok) return owner;
  return recordPaymentMethod(call);
}

/**
 * What `addPaymentMethod` does once the caller may: the card attached at Stripe (or, `attached`,
 * one Stripe already attached — a setup session's — read back and checked to be the team
 * customer's) and recorded. The caller's rights are checked by the verb that calls this.
 */
export async function recordPaymentMethod({
  ctx,
  caller,
  input,
}: BillingCall<{ processor_payment_method_id: string; attached?: boolean }>): Promise<
  Result<PaymentMethodView>
> {
  const stripe = requireProcessor(ctx);
  if (!stripe.ok) return stripe;
  const [known] = await ctx.db
    .select()
    .from(paymentMethods)
    .where(eq(paymentMethods.processorPaymentMethodId, input.processor_payment_method_id));
  if (known && known.teamId === caller.teamId) return ok(toPaymentMethodView(known));
  if (known) return fail("conflict", "this card is already attached to another team");
  const customer = await ensureCustomer(ctx, stripe.value, caller.teamId);
  let attached: Awaited<ReturnType<typeof stripe.value.paymentMethods.attach>>;
  try {
    attached = input.attached
      ? await stripe.value.paymentMethods.retrieve(input.processor_payment_method_id)
      : await stripe.value.paymentMethods.attach(input.processor_payment_method_id, { customer });
  } catch (error) {
    if (isProcessorAnswer(error)) return fail("bad_request", `processor_payment_method_id: ${error.message}`);
    throw error;
  }
  const holder = typeof attached.customer === "string" ? attached.customer : attached.customer?.id;
  if (holder !== customer) return fail("conflict", "this card belongs to another customer at Stripe");
  const hasDefault = (await defaultPaymentMethod(ctx, caller.teamId)) !== null;
  const row: PaymentMethodRow = {
    id: newId("pm"),
    teamId: caller.teamId,
    processorPaymentMethodId: attached.id,
    type: attached.type,
    cardBrand: attached.card?.brand ?? null,
    cardLast4: attached.card?.last4 ?? null,
    cardExpMonth: attached.card?.exp_month ?? null,
    cardExpYear: attached.card?.exp_year ?? null,
    isDefault: !hasDefault,
    addedBy: caller.user.id,
    createdAt: nowIso(),
  };
  await ctx.db.insert(paymentMethods).values(row).onConflictDoNothing();
  // A parallel completion of the same card may have inserted first: answer the stored row.
  const [stored] = await ctx.db
    .select()
    .from(paymentMethods)
    .where(eq(paymentMethods.processorPaymentMethodId, attached.id));
  if (stored && stored.teamId !== caller.teamId)
    return fail("conflict", "this card is already attached to another team");
  return ok(toPaymentMethodView(stored ?? row));
}

async function teamMethod(
  ctx: ServiceContext,
  teamId: string,
  id: string,
): Promise<Result<PaymentMethodRow>> {
  const [row] = await ctx.db
    .select()
    .from(paymentMethods)
    .where(and(eq(paymentMethods.id, id), eq(paymentMethods.teamId, teamId)));
  return row ? ok(row) : fail("not_found", `payment method ${id} not found`);
}

/** One batch: the old default loses the flag in the same transaction the new one gets it. */
export async function setDefaultPaymentMethod({
  ctx,
  caller,
  input,
}: BillingCall<{ payment_method_id: string }>): Promise<Result<PaymentMethodView>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const found = await teamMethod(ctx, caller.teamId, input.payment_method_id);
  if (!found.ok) return found;
  await ctx.db.batch([
    ctx.db
      .update(paymentMethods)
      .set({ isDefault: false })
      .where(and(eq(paymentMethods.teamId, caller.teamId), ne(paymentMethods.id, found.value.id))),
    ctx.db.update(paymentMethods).set({ isDefault: true }).where(eq(paymentMethods.id, found.value.id)),
  ]);
  return ok(toPaymentMethodView({ ...found.value, isDefault: true }));
}

/**
 * Forgotten, then detached at Stripe; when it was the default, the newest other card takes over.
 * The last card of a team with pods is refused (409, `lastCardInUse`). The check is the delete's own
 * condition (one statement, `deleteUnlessNeeded`): two parallel deletes of a team's two cards cannot
 * both pass it, so one of them is the 409.
 */
export async function removePaymentMethod({
  ctx,
  caller,
  input,
}: BillingCall<{ pmId: string }>): Promise<Result<{ status: "deleted" }>> {
  const owner = await requireBillingOwner(ctx, caller);
  if (!owner.ok) return owner;
  const found = await teamMethod(ctx, caller.teamId, input.pmId);
  if (!found.ok) return found;
  const stripe = requireProcessor(ctx);
  if (!stripe.ok) return stripe;
  const row = found.value;
  const covered = await creditsCoverPeriod(ctx.db, caller.teamId, 0);
  if (!(await deleteUnlessNeeded(ctx, row, covered))) {
    // Gone meanwhile (a parallel delete of the same card, the webhook): as if it had never been.
    const still = await teamMethod(ctx, caller.teamId, row.id);
    if (!still.ok) return still;
    return lastCardInUse(ctx, caller.teamId);
  }
  try {
    await stripe.value.paymentMethods.detach(row.processorPaymentMethodId);
  } catch (error) {
    // Already detached at Stripe (a card removed there first): forgetting it here is what is left.
    if (!isProcessorAnswer(error)) {
      // Stripe not reached: the card is still attached there, so it stays here too.
      const hasDefault = (await defaultPaymentMethod(ctx, row.teamId)) !== null;
      await ctx.db
        .insert(paymentMethods)
        .values({ ...row, isDefault: row.isDefault && !hasDefault })
        .onConflictDoNothing();
      throw error;
    }
  }
  await promoteNextDefault(ctx, row);
  return ok({ status: "deleted" });
}

/**
 * Deletes the card in one statement, on the condition that the team does not need it: another card
 * of the team exists, or the team has no live pods, or (`covered`) its credits cover the period.
 * Whether a row was deleted.
 */
async function deleteUnlessNeeded(ctx: ServiceContext, row: PaymentMethodRow, covered: boolean) {
  const other = alias(paymentMethods, "other_pm");
  const notNeeded = covered
    ? undefined
    : or(
        exists(
          ctx.db
            .select({ one: sql`1` })
            .from(other)
            .where(and(eq(other.teamId, row.teamId), ne(other.id, row.id))),
        ),
        notExists(
          ctx.db
            .select({ one: sql`1` })
            .from(pods)
            .where(and(eq(pods.teamId, row.teamId), ne(pods.status, "deleted"))),
        ),
      );
  const deleted = await ctx.db
    .delete(paymentMethods)
    .where(and(eq(paymentMethods.id, row.id), eq(paymentMethods.teamId, row.teamId), notNeeded))
    .returning({ id: paymentMethods.id });
  return deleted.length > 0;
}

/**
 * The team's last card stays while the team has pods (they accrue charges someone must pay), unless
 * the team's credits cover its current period's estimate (services/billing/estimate.ts): 409 naming
 * the pods. Removing one of several cards, or the last of a team without pods, is fine.
 */
async function lastCardInUse(ctx: ServiceContext, teamId: string): Promise<Result<never>> {
  const live = await liveTeamPods(ctx.db, teamId);
  const shown = live.slice(0, 50).map((p) => p.name);
  const more = live.length > shown.length ? ` and ${live.length - shown.length} more` : "";
  return fail(
    "conflict",
    `the team's last payment method pays for its pods; add another card or delete the pods first (its credits do not cover this period); pods: ${shown.join(", ")}${more}`,
  );
}

export async function forgetPaymentMethod(ctx: ServiceContext, row: PaymentMethodRow) {
  await ctx.db.delete(paymentMethods).where(eq(paymentMethods.id, row.id));
  await promoteNextDefault(ctx, row);
}

/** When the forgotten card was the default, the newest other card of the team takes over. */
async function promoteNextDefault(ctx: ServiceContext, row: PaymentMethodRow) {
  if (!row.isDefault) return;
  const [next] = await teamMethods(ctx, row.teamId).limit(1);
  if (next)
    await ctx.db.update(paymentMethods).set({ isDefault: true }).where(eq(paymentMethods.id, next.id));
}

export interface OtherTeamCard extends PaymentMethodView {
  team_id: string;
  team_name: string;
}

/**
 * The cards the caller added on their other teams (teams they still belong to): what the dashboard
 * offers to copy. Another member's cards are not the caller's to see.
 */
export async function listOtherTeamsCards({ ctx, caller }: BillingCall<unknown>): Promise<OtherTeamCard[]> {
  const memberOf = await ctx.db
    .select({ teamId: teamMembers.teamId })
    .from(teamMembers)
    .where(eq(teamMembers.userId, caller.user.id));
  const others = memberOf.map((m) => m.teamId).filter((t) => t !== caller.teamId);
  if (others.length === 0) return [];
  const rows = await ctx.db
    .select({ pm: paymentMethods, teamName: teams.name })
    .from(paymentMethods)
    .innerJoin(teams, eq(teams.id, paymentMethods.teamId))
    .where(and(eq(paymentMethods.addedBy, caller.user.id), inArray(paymentMethods.teamId, others)))
    .orderBy(desc(paymentMethods.createdAt));
  return rows.map((r) => ({ ...toPaymentMethodView(r.pm), team_id: r.pm.teamId, team_name: r.teamName }));
}
