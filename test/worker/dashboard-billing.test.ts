import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { addCard } from "./support/billing";
import { call, registerUser } from "./support/client";
import { page, signedIn } from "./support/dashboard";

const now = () => new Date().toISOString();

/** A credit and two invoices of the team, as the billing job and the affiliate payouts leave them. */
async function seed(teamId: string) {
  const at = now();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO credits (id, team_id, amount, remaining, type, reason, expires_at, created_at) VALUES (?, ?, 1500, 1200, 'promo', ?, NULL, ?)",
    ).bind(`cr_${crypto.randomUUID()}`, teamId, "<img src=x onerror=alert(1)> welcome", at),
    env.DB.prepare(
      "INSERT INTO invoices (id, team_id, status, subtotal, amount_due, amount_paid, currency, period_start, period_end, hosted_invoice_url, created_at, updated_at) VALUES (?, ?, 'open', 2500, 2500, 0, 'usd', '2026-09-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z', 'https://invoice.stripe.test/i/open_one', ?, ?)",
    ).bind(`inv_open_${teamId}`, teamId, at, at),
    env.DB.prepare(
      "INSERT INTO invoices (id, team_id, status, subtotal, amount_due, amount_paid, currency, period_start, period_end, hosted_invoice_url, created_at, updated_at, paid_at) VALUES (?, ?, 'paid', 900, 900, 900, 'usd', '2026-08-01T00:00:00.000Z', '2026-09-01T00:00:00.000Z', 'javascript:alert(1)', ?, ?, ?)",
    ).bind(`inv_paid_${teamId}`, teamId, at, at, at),
  ]);
}

describe("the billing page", () => {
  it("shows the owner the subscription, invoices with Pay and the hosted link, cards, credits and the curl lines", async () => {
    const owner = await signedIn("Billing Owner");
    const teamId = owner.user.active_team_id;
    await seed(teamId);
    const card = await addCard(owner);
    const res = await page("/app/billing", { session: owner.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain("Launch");
    expect(res.text).toContain('data-api="/api/billing/subscription/plan"');
    expect(res.text).toContain('data-api="/api/billing/subscription/cancel"');
    expect(res.text).toContain(`data-api="/api/billing/invoices/inv_open_${teamId}/pay"`);
    expect(res.text).not.toContain(`/api/billing/invoices/inv_paid_${teamId}/pay`);
    expect(res.text).toContain('href="https://invoice.stripe.test/i/open_one"');
    expect(res.text).toContain("$25.00");
    expect(res.text).toContain("4242");
    expect(res.text).toContain(`data-api="/api/billing/payment-methods/${card.id}"`);
    expect(res.text).toContain("$12.00 of $15.00");
    expect(res.text).toContain("curl &#39;http://localhost:8787/api/billing/invoices&#39;");
    expect(res.text).toContain("/api/billing/setup-intent");
  });

  it("escapes a credit's reason and never links an invoice URL that is not https", async () => {
    const owner = await signedIn("Billing Escape");
    await seed(owner.user.active_team_id);
    const res = await page("/app/billing", { session: owner.session });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain("<img src=x");
    expect(res.text).toContain("&lt;img src=x onerror=alert(1)&gt; welcome");
    expect(res.text).not.toContain("javascript:alert");
  });

  it("shows a member the figures without a change button, and the API refuses the member's change", async () => {
    const owner = await signedIn("Billing Owner Two");
    const teamId = owner.user.active_team_id;
    await seed(teamId);
    await addCard(owner);
    const mate = await registerUser("Billing Mate");
    const invite = await call(
      "POST",
      `/api/teams/${teamId}/invitations`,
      { email: mate.user.email, role: "member" },
      { token: owner.token },
    );
    expect(
      (await call("POST", "/api/invitations/accept", { token: invite.body.token }, { token: mate.token }))
        .status,
    ).toBe(200);
    expect((await call("POST", "/api/teams/switch", { team_id: teamId }, { token: mate.token })).status).toBe(
      200,
    );
    const res = await page("/app/billing", { session: mate.token });
    expect(res.status).toBe(200);
    expect(res.text).toContain("$25.00");
    expect(res.text).toContain("4242");
    expect(res.text).toContain("Only the team&#39;s owner changes its billing");
    expect(res.text).not.toContain('data-api="/api/billing');
    const refused = await call("POST", "/api/billing/subscription/cancel", {}, { token: mate.token });
    expect(refused.status).toBe(403);
  });

  it("shows another team's invoices to nobody else, and sends the signed-out to sign in", async () => {
    const owner = await signedIn("Billing Victim");
    await seed(owner.user.active_team_id);
    const stranger = await signedIn("Billing Stranger");
    const res = await page("/app/billing", { session: stranger.session });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(owner.user.active_team_id);
    expect(res.text).not.toContain("$25.00");
    expect(res.text).toContain("No invoices yet.");
    const out = await page("/app/billing");
    expect(out.status).toBe(302);
  });
});
