import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { createDb } from "../../worker/db/client";
import { RATE_LIMITS } from "../../worker/http/rate-limit";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { earnOnInvoicePaid } from "../../worker/services/affiliates/commission";
import { createMailer } from "../../worker/services/mail/mailer";
import { FakeAgent, insertPod } from "./support/agent";
import { addCard, billed, deliver, deliveries, lastDeliverySeq, runBillingAt } from "./support/billing";
import {
  call,
  freshIp,
  PASSWORD,
  type Reply,
  registerUser,
  type TestUser,
  uniqueEmail,
} from "./support/client";
import { createTeam, invite } from "./support/teams";

/**
 * The affiliate program (docs/affiliates.md): every endpoint, attribution through the referral
 * cookie, and commissions on real paid invoices (the billing cron against the Stripe double).
 */

afterEach(() => FakeAgent.closeAll());

const refCookieLine = (r: Reply) => r.headers.getAll("set-cookie").find((l) => l.startsWith("pod_ref="));
const refCookie = (r: Reply) => refCookieLine(r)?.split(";")[0];

async function enrolled(user?: TestUser) {
  const u = user ?? (await registerUser());
  const res = await call("POST", "/api/affiliates/enroll", undefined, { token: u.token });
  expect(res.status).toBe(201);
  return { user: u, affiliate: res.body };
}

const get = (path: string, user: TestUser) => call("GET", path, undefined, { token: user.token });

/** A visit through `code`, then a sign-up carrying its cookie: the referred user. */
async function referredSignup(code: string, email = uniqueEmail("referred")) {
  const visit = await call("POST", "/api/affiliate/visit", { code });
  expect(visit.status).toBe(200);
  const cookie = refCookie(visit);
  expect(cookie).toBeDefined();
  const res = await call(
    "POST",
    "/api/auth/register",
    { email, password: PASSWORD, name: "Ref" },
    { cookie },
  );
  expect(res.status).toBe(201);
  return { ...res.body, password: PASSWORD } as TestUser;
}

/**
 * One month's invoice for the team, of `amount` cents, charged to its card and paid by the billing
 * cron: a deleted pod carries a hand-written charge so that the amount is exact.
 */
async function paidInvoice(teamId: string, year: number, month: number, amount: number) {
  const pod = await insertPod({ hostId: null, teamId });
  await env.DB.prepare("UPDATE pods SET status = 'deleted', deleted_at = ? WHERE id = ?")
    .bind(new Date().toISOString(), pod.id)
    .run();
  const day = `${year}-${String(month).padStart(2, "0")}-10`;
  await env.DB.prepare(
    "INSERT INTO pod_charges (team_id, pod_id, day, pod_name, plan_slug, amount) VALUES (?, ?, ?, ?, 'launch', ?)",
  )
    .bind(teamId, pod.id, day, pod.name, amount)
    .run();
  await runBillingAt(Date.UTC(year, month, 1, 6));
  const inv = await env.DB.prepare(
    "SELECT id, status, amount_paid FROM invoices WHERE team_id = ? AND period_start = ?",
  )
    .bind(teamId, `${day.slice(0, 8)}01T00:00:00.000Z`)
    .first<{ id: string; status: string; amount_paid: number }>();
  expect(inv).toMatchObject({ status: "paid", amount_paid: amount });
  return inv?.id ?? "";
}

describe("before enrolling", () => {
  it("answers 404 `not enrolled` on every endpoint but the visit", async () => {
    const user = await registerUser();
    for (const path of ["dashboard", "referrals", "earnings", "payouts"]) {
      const res = await get(`/api/affiliates/${path}`, user);
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ error: "not enrolled" });
    }
    const put = await call(
      "PUT",
      "/api/affiliates/settings",
      { paypal_email: "a@b.co" },
      { token: user.token },
    );
    expect(put.status).toBe(404);
    expect(put.body.error).toBe("not enrolled");
    expect((await call("POST", "/api/affiliate/visit", { code: "nobody-here" })).status).toBe(200);
    expect((await call("GET", "/api/affiliates/dashboard")).status).toBe(401);
  });
});

describe("enroll, dashboard, settings", () => {
  it("enrolls once (201, then 200 with the same record) and shows the Starter dashboard", async () => {
    const { user, affiliate } = await enrolled();
    expect(affiliate).toMatchObject({
      user_id: user.user.id,
      tier_slug: "starter",
      status: "active",
      total_revenue: 0,
      total_earnings: 0,
      total_paid_out: 0,
      referral_count: 0,
      custom_slug: null,
    });
    expect(affiliate.referral_code).toMatch(/^[0-9a-z]{10}$/);
    const again = await call("POST", "/api/affiliates/enroll", undefined, { token: user.token });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(affiliate);

    const dash = await get("/api/affiliates/dashboard", user);
    expect(dash.status).toBe(200);
    expect(dash.body).toMatchObject({
      affiliate,
      tier: { slug: "starter", name: "Starter", commission_rate: 10 },
      next_tier: {
        slug: "partner",
        name: "Partner",
        commission_rate: 15,
        milestone_amount: 50_000,
        bonus_amount: 2_500,
      },
      progress_pct: 0,
      pending_balance: 0,
      visit_count: 0,
    });
    expect(dash.body.referral_link).toContain(affiliate.referral_code);
    expect(dash.body.referral_link_alt).toContain(affiliate.referral_code);
    for (const [path, key] of [
      ["referrals", "referrals"],
      ["earnings", "earnings"],
      ["payouts", "payouts"],
    ] as const) {
      const res = await get(`/api/affiliates/${path}?limit=5`, user);
      expect(res.body).toEqual({ [key]: [], total: 0, limit: 5, offset: 0 });
    }
    expect((await get("/api/affiliates/referrals?limit=0", user)).status).toBe(400);
    expect((await get("/api/affiliates/earnings?offset=-1", user)).status).toBe(400);
  });

  it("sets a custom slug (400 when malformed, 409 when taken) and the original code keeps working", async () => {
    const { user, affiliate } = await enrolled();
    const other = await enrolled();
    const put = (body: unknown, u = user) =>
      call("PUT", "/api/affiliates/settings", body, { token: u.token });

    for (const bad of ["ab", "a".repeat(31), "Has-Caps", "sp ace", "under_score", 7]) {
      expect((await put({ custom_slug: bad })).status, String(bad)).toBe(400);
    }
    expect((await put({ paypal_email: "not an email" })).status).toBe(400);
    const slug = `s-${crypto.randomUUID().slice(0, 8)}`;
    const ok = await put({ custom_slug: slug, paypal_email: "pay@example.com" });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      custom_slug: slug,
      paypal_email: "pay@example.com",
      referral_code: affiliate.referral_code,
    });
    expect((await put({ custom_slug: slug }, other.user)).status).toBe(409);
    expect((await put({ custom_slug: affiliate.referral_code }, other.user)).status).toBe(409);
    expect((await put({ custom_slug: slug })).status).toBe(200); // one's own slug again

    const dash = await get("/api/affiliates/dashboard", user);
    expect(dash.body.referral_link).toContain(slug);
    await referredSignup(slug);
    await referredSignup(affiliate.referral_code);
    const referrals = await get("/api/affiliates/referrals", user);
    expect(referrals.body.total).toBe(2);
    expect((await get("/api/affiliates/dashboard", user)).body.visit_count).toBe(2);
  });
});

describe("visits and attribution", () => {
  it("always answers 200, sets an HttpOnly Lax bounded cookie, ignores the affiliate's own click", async () => {
    const { user, affiliate } = await enrolled();
    const unknown = await call("POST", "/api/affiliate/visit", { code: "no-such-code" });
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ status: "ok" });
    expect(refCookieLine(unknown)).toBeUndefined();
    expect((await call("POST", "/api/affiliate/visit", {})).status).toBe(400);

    const visit = await call("POST", "/api/affiliate/visit", { code: affiliate.referral_code });
    expect(visit.body).toEqual({ status: "ok" });
    const line = refCookieLine(visit) ?? "";
    expect(line).toMatch(/HttpOnly/i);
    expect(line).toMatch(/SameSite=Lax/i);
    expect(line).toMatch(/Max-Age=2592000/);

    const own = await call(
      "POST",
      "/api/affiliate/visit",
      { code: affiliate.referral_code },
      { token: user.token },
    );
    expect(own.status).toBe(200);
    expect(refCookieLine(own)).toBeUndefined();
    expect((await get("/api/affiliates/dashboard", user)).body.visit_count).toBe(1);
  });

  it(`anonymous clicks are limited per IP (${RATE_LIMITS.affiliateVisit.limit} per 10 minutes, then 429) and their rows expire after 30 days`, async () => {
    const { user, affiliate } = await enrolled();
    const ip = freshIp();
    const click = () => call("POST", "/api/affiliate/visit", { code: affiliate.referral_code }, { ip });
    for (let i = 0; i < RATE_LIMITS.affiliateVisit.limit; i++) expect((await click()).status).toBe(200);
    const refused = await click();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refCookieLine(refused)).toBeUndefined();
    // unknown codes count too: the limit is on writes a stranger can cause, whatever they name
    expect((await call("POST", "/api/affiliate/visit", { code: "no-such-code" }, { ip })).status).toBe(429);
    // another address still clicks
    expect((await call("POST", "/api/affiliate/visit", { code: affiliate.referral_code })).status).toBe(200);
    const counted = RATE_LIMITS.affiliateVisit.limit + 1;
    expect((await get("/api/affiliates/dashboard", user)).body.visit_count).toBe(counted);

    // the cron: rows past the 30-day window go, newer ones stay
    await env.DB.prepare(
      "UPDATE affiliate_visits SET created_at = ? WHERE id IN (SELECT id FROM affiliate_visits WHERE affiliate_id = ? LIMIT 5)",
    )
      .bind(new Date(Date.now() - 31 * 86_400_000).toISOString(), affiliate.id)
      .run();
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "affiliate-visits-expiry"),
    );
    expect((await get("/api/affiliates/dashboard", user)).body.visit_count).toBe(counted - 5);
  });

  it("attributes a sign-up through the cookie, masks its email, and refuses forged cookies and self-referrals", async () => {
    const { user, affiliate } = await enrolled();
    const email = uniqueEmail("grace");
    const referred = await referredSignup(affiliate.referral_code, email);

    // a forged cookie, no cookie: no referral
    const forged = await call(
      "POST",
      "/api/auth/register",
      { email: uniqueEmail(), password: PASSWORD, name: "F" },
      { cookie: `pod_ref=${"a".repeat(32)}` },
    );
    expect(forged.status).toBe(201);
    await registerUser();

    // the affiliate's second account: from their signed-in browser, or a plus-address of their mailbox
    const visit = await call("POST", "/api/affiliate/visit", { code: affiliate.referral_code });
    const cookie = refCookie(visit);
    const second = await call(
      "POST",
      "/api/auth/register",
      { email: uniqueEmail(), password: PASSWORD, name: "Me again" },
      { cookie, token: user.token },
    );
    expect(second.status).toBe(201);
    const [local, domain] = user.user.email.split("@");
    const plus = await call(
      "POST",
      "/api/auth/register",
      { email: `${local}+alt@${domain}`, password: PASSWORD, name: "Me too" },
      { cookie },
    );
    expect(plus.status).toBe(201);

    const list = await get("/api/affiliates/referrals", user);
    expect(list.body.total).toBe(1);
    expect(list.body.referrals).toEqual([
      expect.objectContaining({
        affiliate_id: affiliate.id,
        referred_user: referred.user.id,
        status: "pending",
        activated_at: null,
        email: `g***@${email.split("@")[1]}`,
        pod_count: 0,
        // every team has its subscription from the start (docs/billing.md)
        plan_slug: "launch",
        subscription_status: "active",
      }),
    ]);
    expect(JSON.stringify(list.body)).not.toContain(email);
    expect((await get("/api/affiliates/dashboard", user)).body.affiliate.referral_count).toBe(1);

    // another user sees nothing of it: not enrolled, then only their own (empty) record
    const other = await registerUser();
    expect((await get("/api/affiliates/referrals", other)).status).toBe(404);
    await enrolled(other);
    expect((await get("/api/affiliates/referrals", other)).body.total).toBe(0);
    expect((await get("/api/affiliates/dashboard", other)).body.affiliate.id).not.toBe(affiliate.id);
  });

  it("attributes an account made by accepting an invitation signed out (its personal team), not an existing one", async () => {
    const { user, affiliate } = await enrolled();
    const owner = await registerUser();
    const team = await createTeam(owner);
    const cookieOfVisit = async () =>
      refCookie(await call("POST", "/api/affiliate/visit", { code: affiliate.referral_code }));

    const email = uniqueEmail("invited");
    const invitation = await invite(owner, team.id, email);
    const accepted = await call(
      "POST",
      "/api/invitations/accept",
      { token: invitation.token, email, name: "Invited", password: PASSWORD },
      { cookie: await cookieOfVisit() },
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ status: "joined", team_id: team.id });
    expect(refCookieLine(accepted)).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/i); // spent

    // an account that already existed signs in by accepting: no sign-up, no referral
    const existing = await registerUser();
    const second = await invite(owner, team.id, existing.user.email);
    const signedIn = await call(
      "POST",
      "/api/invitations/accept",
      { token: second.token, email: existing.user.email, name: "Old", password: PASSWORD },
      { cookie: await cookieOfVisit() },
    );
    expect(signedIn.status).toBe(200);

    const list = (await get("/api/affiliates/referrals", user)).body;
    expect(list.total).toBe(1);
    const row = await env.DB.prepare(
      "SELECT r.referred_team_id AS team, u.email FROM referrals r JOIN users u ON u.id = r.referred_user_id WHERE r.affiliate_id = ?",
    )
      .bind(affiliate.id)
      .first<{ team: string; email: string }>();
    expect(row?.email).toBe(email.toLowerCase());
    // the personal team made at sign-up (whose invoices earn), not the team it joined
    expect(row?.team).not.toBe(team.id);
    const kind = await env.DB.prepare("SELECT account_type FROM teams WHERE id = ?").bind(row?.team).first();
    expect(kind).toEqual({ account_type: "personal" });
  });
});

describe("commissions and tiers", () => {
  it("activates on the first paid invoice, earns at the tier's rate, upgrades to Partner with the $25 bonus exactly once, never down", async () => {
    const { user, affiliate } = await enrolled();
    const referred = await referredSignup(affiliate.referral_code);
    const teamId = referred.user.active_team_id;
    await addCard(referred);

    // 1st payment, $300 at Starter 10%: the referral becomes active
    const first = await paidInvoice(teamId, 2301, 1, 30_000);
    const [ref] = (await get("/api/affiliates/referrals", user)).body.referrals;
    expect(ref.status).toBe("active");
    expect(ref.activated_at).not.toBeNull();
    let earnings = (await get("/api/affiliates/earnings", user)).body;
    expect(earnings.earnings).toEqual([
      expect.objectContaining({
        kind: "commission",
        invoice_id: first,
        referral_id: ref.id,
        payment_amount: 30_000,
        commission_rate: 10,
        commission_amount: 3_000,
        tier_slug: "starter",
      }),
    ]);
    expect((await get("/api/affiliates/dashboard", user)).body.progress_pct).toBe(60);

    // 2nd payment, $200.07: crosses $500 — earns at the old rate (rounded down), then Partner + $25
    const second = await paidInvoice(teamId, 2301, 2, 20_007);
    let dash = (await get("/api/affiliates/dashboard", user)).body;
    expect(dash.tier).toEqual({ slug: "partner", name: "Partner", commission_rate: 15 });
    expect(dash.next_tier).toMatchObject({ slug: "pro", milestone_amount: 200_000, bonus_amount: 10_000 });
    expect(dash.affiliate.total_revenue).toBe(50_007);
    expect(dash.affiliate.total_earnings).toBe(3_000 + 2_000 + 2_500);
    expect(dash.pending_balance).toBe(7_500);
    earnings = (await get("/api/affiliates/earnings", user)).body;
    expect(earnings.total).toBe(3);
    expect(earnings.earnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          invoice_id: second,
          commission_rate: 10,
          commission_amount: 2_000,
          tier_slug: "starter",
        }),
        expect.objectContaining({
          kind: "bonus",
          commission_amount: 2_500,
          tier_slug: "partner",
          payment_amount: 0,
        }),
      ]),
    );

    // replays: the hook again for both invoices, and Stripe's invoice.paid webhook again
    const ctx = { db: createDb(env.DB), env, mailer: createMailer(createDb(env.DB), env) };
    await earnOnInvoicePaid(ctx, { id: second, teamId, amountPaid: 20_007 });
    await earnOnInvoicePaid(ctx, { id: first, teamId, amountPaid: 30_000 });
    expect((await get("/api/affiliates/earnings", user)).body.total).toBe(3);

    // 3rd payment at Partner's 15%, with its webhook delivered twice
    const mark = await lastDeliverySeq();
    const third = await paidInvoice(teamId, 2301, 3, 10_000);
    const paid = (await deliveries(mark)).filter(
      (d) => d.type === "invoice.paid" && JSON.parse(d.payload).data.object.metadata.invoice_id === third,
    );
    expect(paid.length).toBeGreaterThan(0);
    for (const d of paid) {
      await deliver(d);
      await deliver(d);
    }
    earnings = (await get("/api/affiliates/earnings", user)).body;
    expect(earnings.total).toBe(4);
    expect(earnings.earnings.filter((e: { kind: string }) => e.kind === "bonus")).toHaveLength(1);
    expect(earnings.earnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          invoice_id: third,
          commission_rate: 15,
          commission_amount: 1_500,
          tier_slug: "partner",
        }),
      ]),
    );

    // a tier given by arrangement above what the revenue reaches is kept: never down
    await env.DB.prepare("UPDATE affiliates SET tier_slug = 'elite' WHERE id = ?").bind(affiliate.id).run();
    await paidInvoice(teamId, 2301, 4, 1_000);
    dash = (await get("/api/affiliates/dashboard", user)).body;
    expect(dash.tier.slug).toBe("elite");
    expect(dash.next_tier).toBeUndefined();
    expect(dash.progress_pct).toBe(100);
    expect(dash.affiliate.total_earnings).toBe(3_000 + 2_000 + 2_500 + 1_500 + 200);

    // the referred team's own view of billing is unaffected; a payout recorded by the operator shows
    await env.DB.prepare(
      "INSERT INTO affiliate_payouts (id, affiliate_id, amount, method, status, reference, note, paid_at, created_at) VALUES ('po_t1', ?, 5000, 'paypal', 'paid', 'PP-1', NULL, ?, ?)",
    )
      .bind(affiliate.id, new Date().toISOString(), new Date().toISOString())
      .run();
    const payouts = (await get("/api/affiliates/payouts", user)).body;
    expect(payouts).toMatchObject({ total: 1, payouts: [{ id: "po_t1", amount: 5000, method: "paypal" }] });
    dash = (await get("/api/affiliates/dashboard", user)).body;
    expect(dash.pending_balance).toBe(9_200 - 5_000);
    expect((await call("GET", "/api/billing/invoices", undefined, billed(referred))).status).toBe(200);
  });

  it("crosses several milestones in one payment: each bonus once, the highest tier reached", async () => {
    const { user, affiliate } = await enrolled();
    const referred = await referredSignup(affiliate.referral_code);
    await addCard(referred);
    await paidInvoice(referred.user.active_team_id, 2302, 1, 250_000);
    const dash = (await get("/api/affiliates/dashboard", user)).body;
    expect(dash.tier.slug).toBe("pro");
    expect(dash.affiliate.total_earnings).toBe(25_000 + 2_500 + 10_000);
  });

  it("churns while the referred team is cancelled, comes back when it subscribes again; the closing invoice still earns", async () => {
    const { user, affiliate } = await enrolled();
    const referred = await referredSignup(affiliate.referral_code);
    await addCard(referred);
    const status = async () => (await get("/api/affiliates/referrals", user)).body.referrals[0].status;
    const subscribe = async () =>
      expect(
        (await call("POST", "/api/billing/subscribe", { plan_slug: "launch" }, billed(referred))).status,
      ).toBe(201);
    const cancel = async () =>
      expect(
        (await call("POST", "/api/billing/subscription/cancel", undefined, billed(referred))).body,
      ).toEqual({ status: "cancelled" });

    await subscribe();
    await cancel();
    expect(await status()).toBe("churned");
    await subscribe(); // never paid: back to pending
    expect(await status()).toBe("pending");
    await paidInvoice(referred.user.active_team_id, 2304, 1, 10_000);
    expect(await status()).toBe("active");
    await cancel();
    expect(await status()).toBe("churned");
    // the invoice closing the cancelled team's last period earns; the referral stays churned
    await paidInvoice(referred.user.active_team_id, 2304, 2, 5_000);
    expect(await status()).toBe("churned");
    const earned = (await get("/api/affiliates/earnings", user)).body.earnings.map(
      (e: { commission_amount: number }) => e.commission_amount,
    );
    expect(earned.sort()).toEqual([1_000, 500].sort());
    await subscribe();
    expect(await status()).toBe("active");
  });

  it("earns nothing on the invoices of a team nobody referred", async () => {
    const { user } = await enrolled();
    const stranger = await registerUser();
    await addCard(stranger);
    await paidInvoice(stranger.user.active_team_id, 2303, 1, 10_000);
    expect((await get("/api/affiliates/earnings", user)).body.total).toBe(0);
  });
});
