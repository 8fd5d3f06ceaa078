import { and, eq, isNull, lt, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { type InvoiceRow, invoiceLines, invoices, podCharges } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { applyCredits } from "./credits";
import { ensureCustomer } from "./customers";
import { markInvoicePaid } from "./invoice-paid";
import { defaultPaymentMethod } from "./payment-methods";
import { periodAt } from "./periods";
import { isProcessorAnswer, type Stripe } from "./stripe";
import { markPastDue } from "./subscriptions";

/**
 * Invoicing at the end of a period: the team's charges not yet invoiced are claimed by one local
 * invoice per team and period (unique on team + period end), a line per pod; credits apply first;
 * the invoice is made at Stripe with an item per line (and one negative item for the credits),
 * finalized and charged to the default card. Every Stripe call carries an idempotency key derived
 * from the local invoice, and the local row records each step, so a crash or a retry resumes where
 * it stopped and never makes a second invoice or charge.
 */

const TEAMS_PER_PAGE = 50;

/** Teams with charges before `periodEnd` that no invoice holds yet, one page after `afterTeamId`. */
async function teamsToInvoice(ctx: ServiceContext, periodEndDay: string, afterTeamId: string) {
  const rows = await ctx.db
    .selectDistinct({ teamId: podCharges.teamId })
    .from(podCharges)
    .where(
      and(
        isNull(podCharges.invoiceId),
        sql`${podCharges.teamId} > ${afterTeamId}`,
        lt(podCharges.day, periodEndDay),
      ),
    )
    .orderBy(podCharges.teamId)
    .limit(TEAMS_PER_PAGE);
  return rows.map((r) => r.teamId);
}

/** Opens (or finds) the team's invoice for the period ending `periodEnd` and claims its charges. */
async function claimCharges(
  ctx: ServiceContext,
  teamId: string,
  periodEnd: string,
): Promise<InvoiceRow | null> {
  const endDay = periodEnd.slice(0, 10);
  const [first] = await ctx.db
    .select({ day: sql<string>`MIN(${podCharges.day})` })
    .from(podCharges)
    .where(and(eq(podCharges.teamId, teamId), isNull(podCharges.invoiceId), lt(podCharges.day, endDay)));
  const start = first?.day ? periodAt(Date.parse(`${first.day}T00:00:00Z`)).start : periodEnd;
  const now = nowIso();
  await ctx.db
    .insert(invoices)
    .values({
      id: newId("inv"),
      teamId,
      status: "draft",
      periodStart: start,
      periodEnd,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing();
  const [inv] = await ctx.db
    .select()
    .from(invoices)
    .where(and(eq(invoices.teamId, teamId), eq(invoices.periodEnd, periodEnd)));
  if (inv?.status !== "draft") return null;
  await ctx.db
    .update(podCharges)
    .set({ invoiceId: inv.id })
    .where(and(eq(podCharges.teamId, teamId), isNull(podCharges.invoiceId), lt(podCharges.day, endDay)));
  return inv;
}

/** A line per pod: its days and their sum; the plan is the one of its latest day. */
async function writeLines(ctx: ServiceContext, inv: InvoiceRow) {
  const grouped = await ctx.db
    .select({
      podId: podCharges.podId,
      lastDay: sql<string>`MAX(${podCharges.day})`,
      podName: podCharges.podName,
      planSlug: podCharges.planSlug,
      days: sql<number>`COUNT(*)`,
      amount: sql<number>`SUM(${podCharges.amount})`,
    })
    .from(podCharges)
    .where(eq(podCharges.invoiceId, inv.id))
    .groupBy(podCharges.podId);
  const lines = grouped.map((g) => ({
    id: `il_${inv.id.slice(4)}_${g.podId}`,
    invoiceId: inv.id,
    podId: g.podId,
    podName: g.podName,
    planSlug: g.planSlug,
    days: Number(g.days),
    amount: Number(g.amount),
  }));
  if (lines.length > 0) await ctx.db.insert(invoiceLines).values(lines).onConflictDoNothing();
  return lines;
}

/** Brings a claimed (`draft`) invoice to `open` or `paid` at Stripe, then tries the charge. */
export async function finishInvoice(
  ctx: ServiceContext,
  stripe: Stripe,
  draft: InvoiceRow,
  at = nowIso(),
): Promise<void> {
  const lines = await writeLines(ctx, draft);
  const subtotal = lines.reduce((sum, l) => sum + l.amount, 0);
  const credited = await applyCredits(ctx.db, draft.id, draft.teamId, subtotal);
  const customer = await ensureCustomer(ctx, stripe, draft.teamId);

  let processorId = draft.processorInvoiceId;
  if (!processorId) {
    const made = await stripe.invoices.create(
      {
        customer,
        currency: "usd",
        collection_method: "charge_automatically",
        auto_advance: false,
        pending_invoice_items_behavior: "exclude",
        metadata: { team_id: draft.teamId, invoice_id: draft.id },
      },
      { idempotencyKey: `${draft.id}:create` },
    );
    processorId = made.id ?? null;
    if (!processorId) throw new Error("the processor made an invoice without an id");
    await ctx.db
      .update(invoices)
      .set({ processorInvoiceId: processorId, updatedAt: nowIso() })
      .where(eq(invoices.id, draft.id));
  }
  let remote = await stripe.invoices.retrieve(processorId);
  if (remote.status === "draft") {
    for (const line of lines) {
      await stripe.invoiceItems.create(
        {
          customer,
          invoice: processorId,
          currency: "usd",
          amount: line.amount,
          description: `${line.podName} (${line.planSlug}), ${line.days} day${line.days === 1 ? "" : "s"}`,
          metadata: { pod_id: line.podId },
        },
        { idempotencyKey: `${draft.id}:line:${line.podId}` },
      );
    }
    if (credited > 0) {
      await stripe.invoiceItems.create(
        {
          customer,
          invoice: processorId,
          currency: "usd",
          amount: -credited,
          description: "Credits applied",
        },
        { idempotencyKey: `${draft.id}:credits` },
      );
    }
    remote = await stripe.invoices.finalizeInvoice(
      processorId,
      {},
      { idempotencyKey: `${draft.id}:finalize` },
    );
  }
  await ctx.db
    .update(invoices)
    .set({
      status: remote.status === "paid" ? "paid" : "open",
      amountDue: remote.amount_due,
      hostedInvoiceUrl: remote.hosted_invoice_url ?? null,
      updatedAt: nowIso(),
    })
    .where(and(eq(invoices.id, draft.id), eq(invoices.status, "draft")));
  if (remote.status === "paid") {
    await markInvoicePaid(ctx, draft.id, remote.amount_paid);
    return;
  }
  const [open] = await ctx.db.select().from(invoices).where(eq(invoices.id, draft.id));
  if (open?.status === "open") await chargeInvoice(ctx, stripe, open, at);
}

/**
 * Charges an open invoice to the team's default card. A decline (or no card at all) puts the
 * team's subscription `past_due`; the answer says whether the charge reached Stripe.
 */
export async function chargeInvoice(
  ctx: ServiceContext,
  stripe: Stripe,
  inv: InvoiceRow,
  /** when it happens: the start of the grace period if it fails (the cron's clock) */
  at = nowIso(),
): Promise<Result<InvoiceRow>> {
  if (!inv.processorInvoiceId) return fail("conflict", `invoice ${inv.id} is still being prepared`);
  const card = await defaultPaymentMethod(ctx, inv.teamId);
  if (!card) {
    await markPastDue(ctx, inv.teamId, at);
    return fail("bad_request", "the team has no default payment method: add a card first");
  }
  try {
    const paid = await stripe.invoices.pay(inv.processorInvoiceId, {
      payment_method: card.processorPaymentMethodId,
    });
    if (paid.status === "paid") await markInvoicePaid(ctx, inv.id, paid.amount_paid);
  } catch (error) {
    if (!isProcessorAnswer(error)) throw error;
    await markPastDue(ctx, inv.teamId, at);
    return fail("bad_request", `the payment failed: ${error.message}`, {
      hosted_invoice_url: inv.hostedInvoiceUrl ?? `invoice ${inv.id}`,
    });
  }
  const [now] = await ctx.db.select().from(invoices).where(eq(invoices.id, inv.id));
  return now ? ok(now) : fail("not_found", `invoice ${inv.id} not found`);
}

/**
 * The cron's invoicing: every period that has ended (everything before the month of `now`) is
 * invoiced, teams taken a page at a time; drafts left by an interrupted run are finished first.
 * A team whose invoicing fails is logged and retried on the next run; the others go on.
 */
export async function invoiceEndedPeriods(ctx: ServiceContext, stripe: Stripe, now: number): Promise<number> {
  const periodEnd = periodAt(now).start;
  const at = new Date(now).toISOString();
  let made = 0;
  const attempt = async (teamId: string, work: () => Promise<void>) => {
    try {
      await work();
      made++;
    } catch (error) {
      console.error(JSON.stringify({ msg: "invoicing failed", teamId, error: String(error) }));
    }
  };
  const drafts = await ctx.db.select().from(invoices).where(eq(invoices.status, "draft")).limit(200);
  for (const draft of drafts) await attempt(draft.teamId, () => finishInvoice(ctx, stripe, draft, at));
  let cursor = "";
  for (;;) {
    const teams = await teamsToInvoice(ctx, periodEnd.slice(0, 10), cursor);
    if (teams.length === 0) break;
    for (const teamId of teams) {
      await attempt(teamId, async () => {
        const draft = await claimCharges(ctx, teamId, periodEnd);
        if (draft) await finishInvoice(ctx, stripe, draft, at);
      });
    }
    cursor = teams.at(-1) ?? cursor;
  }
  return made;
}
