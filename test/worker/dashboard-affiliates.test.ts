import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call } from "./support/client";
import { page, signedIn } from "./support/dashboard";

/** An earning and a payout of the affiliate, as the commission hook and an operator's payout leave them. */
async function seed(affiliateId: string) {
  const at = new Date().toISOString();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO affiliate_earnings (id, affiliate_id, referral_id, invoice_id, kind, payment_amount, commission_rate, commission_amount, tier_slug, dedupe_key, created_at) VALUES (?, ?, NULL, NULL, 'commission', 10000, 10, 1000, 'starter', ?, ?)",
    ).bind(`ae_${crypto.randomUUID()}`, affiliateId, `dk_${crypto.randomUUID()}`, at),
    env.DB.prepare(
      "INSERT INTO affiliate_payouts (id, affiliate_id, amount, method, status, reference, note, paid_at, created_at) VALUES (?, ?, 400, 'paypal', 'paid', ?, ?, ?, ?)",
    ).bind(`ap_${crypto.randomUUID()}`, affiliateId, "<script>alert(1)</script>", "<b>thanks</b>", at, at),
  ]);
}

describe("the affiliates page", () => {
  it("offers to enroll, and the signed-out go to sign in", async () => {
    const user = await signedIn("Not Yet Affiliate");
    const res = await page("/app/affiliates", { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain('data-api="/api/affiliates/enroll"');
    expect(res.text).toContain("/api/affiliates/enroll&#39;");
    expect((await page("/app/affiliates")).status).toBe(302);
  });

  it("shows the link with Copy, tier progress, earnings and payouts escaped, settings and the curl lines", async () => {
    const user = await signedIn("Affiliate Aff");
    const enrolled = await call("POST", "/api/affiliates/enroll", {}, { token: user.token });
    expect(enrolled.status).toBe(201);
    await seed(enrolled.body.id);
    const res = await page("/app/affiliates", { session: user.session });
    expect(res.status).toBe(200);
    const link = `http://localhost:8787/r/${enrolled.body.referral_code}`;
    expect(res.text).toContain(`data-copy="${link}"`);
    expect(res.text).toContain("Starter tier");
    expect(res.text).toContain("to Partner");
    expect(res.text).toContain('<progress max="100" value="20">');
    expect(res.text).toContain("$10.00");
    expect(res.text).toContain("$6.00");
    expect(res.text).not.toContain("<script>alert(1)</script>");
    expect(res.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(res.text).toContain("&lt;b&gt;thanks&lt;/b&gt;");
    expect(res.text).toContain('data-api="/api/affiliates/settings"');
    expect(res.text).toContain("/api/affiliates/payouts?limit=50&amp;offset=0");
  });

  it("shows a user only their own affiliate account", async () => {
    const owner = await signedIn("Affiliate Victim");
    const enrolled = await call("POST", "/api/affiliates/enroll", {}, { token: owner.token });
    await seed(enrolled.body.id);
    const stranger = await signedIn("Affiliate Stranger");
    const res = await page("/app/affiliates", { session: stranger.session });
    expect(res.text).toContain('data-api="/api/affiliates/enroll"');
    expect(res.text).not.toContain(enrolled.body.referral_code);
    expect(res.text).not.toContain("thanks");
  });
});
