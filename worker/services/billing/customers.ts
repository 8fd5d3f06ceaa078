import { eq } from "drizzle-orm";
import { billingCustomers } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import type { Stripe } from "./stripe";

/**
 * The team's customer at Stripe, made on first need. The idempotency key makes two first calls
 * racing each other one customer; the unique team key keeps one mapping.
 */
export async function ensureCustomer(ctx: ServiceContext, stripe: Stripe, teamId: string): Promise<string> {
  const [known] = await ctx.db
    .select({ id: billingCustomers.processorCustomerId })
    .from(billingCustomers)
    .where(eq(billingCustomers.teamId, teamId));
  if (known) return known.id;
  const customer = await stripe.customers.create(
    { metadata: { team_id: teamId } },
    { idempotencyKey: `customer:${teamId}` },
  );
  await ctx.db
    .insert(billingCustomers)
    .values({ teamId, processorCustomerId: customer.id, createdAt: nowIso() })
    .onConflictDoNothing();
  const [stored] = await ctx.db
    .select({ id: billingCustomers.processorCustomerId })
    .from(billingCustomers)
    .where(eq(billingCustomers.teamId, teamId));
  return stored?.id ?? customer.id;
}

export async function customerOf(ctx: ServiceContext, teamId: string): Promise<string | null> {
  const [row] = await ctx.db
    .select({ id: billingCustomers.processorCustomerId })
    .from(billingCustomers)
    .where(eq(billingCustomers.teamId, teamId));
  return row?.id ?? null;
}
