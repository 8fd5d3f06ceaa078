import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../worker";
import { addCard, billed, billingEnv } from "./support/billing";
import { call, freshIp, type TestUser } from "./support/client";
import { DASHBOARD_ORIGIN, signedIn } from "./support/dashboard";
import { teamFixture } from "./support/teams";

/**
 * Adding a card through Stripe's hosted setup page (docs/billing.md "Adding a card on Stripe's
 * page"): `POST /api/billing/setup-session` makes a Checkout Session in setup mode at the Stripe
 * double, the double's hosted page saves a card and sends the browser to the dashboard's return
 * handler, which records the card as the team's default, for the session's own team only.
 */

/** A dashboard page as a browser fetches it, with the processor on (a key for this request). */
async function billedPage(path: string, session?: string) {
  const headers: Record<string, string> = { "cf-connecting-ip": freshIp(), "sec-fetch-site": "same-origin" };
  if (session) headers.cookie = `pod_session=${session}`;
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${DASHBOARD_ORIGIN}${path}`, { headers, redirect: "manual" }),
    { ...env, ...billingEnv },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function setupSession(user: TestUser) {
  const res = await call("POST", "/api/billing/setup-session", undefined, billed(user));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; url: string };
}

/** What a person does on Stripe's page: pick a card and press "Save card". The URL it sends them to. */
async function saveCardAtStripe(url: string, card = "tok_mastercard"): Promise<string> {
  const shown = await fetch(url);
  expect(shown.status).toBe(200);
  expect(await shown.text()).toContain("Save card");
  const saved = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ card }),
    redirect: "manual",
  });
  expect(saved.status).toBe(303);
  return saved.headers.get("location") ?? "";
}

const cards = async (user: TestUser) =>
  (await call("GET", "/api/billing/payment-methods", undefined, billed(user))).body as {
    id: string;
    card_last4: string;
    is_default: boolean;
  }[];

describe("adding a card on Stripe's hosted page", () => {
  it("makes a setup session whose page returns to the dashboard, which records the card as the default", async () => {
    const owner = await signedIn("Card Adder");
    const first = await addCard(owner, "tok_visa");
    expect(first.is_default).toBe(true);
    const session = await setupSession(owner);
    expect(session.id).toMatch(/^cs_test_/);
    expect(session.url.startsWith(env.STRIPE_API_BASE ?? "")).toBe(true);
    const back = await saveCardAtStripe(session.url);
    expect(back).toBe(`${DASHBOARD_ORIGIN}/app/billing/card-added?session_id=${session.id}`);
    const returned = await billedPage(back.slice(DASHBOARD_ORIGIN.length), owner.session);
    expect(returned.status, returned.text).toBe(303);
    expect(returned.headers.get("location")).toBe("/app/billing?card=added");
    const after = await cards(owner);
    expect(after).toHaveLength(2);
    expect(after.find((c) => c.card_last4 === "4444")?.is_default).toBe(true);
    expect(after.find((c) => c.card_last4 === "4242")?.is_default).toBe(false);
    // the browser's back button returns to the same URL: the same card, not a second one
    expect((await billedPage(back.slice(DASHBOARD_ORIGIN.length), owner.session)).status).toBe(303);
    expect(await cards(owner)).toHaveLength(2);
    const billing = await billedPage("/app/billing?card=added", owner.session);
    expect(billing.text).toContain("Card added");
    expect(billing.text).toContain('data-api="/api/billing/setup-session"');
    expect(billing.text).toContain("/app/assets/card.js");
    expect(billing.text).toContain("curl -X POST &#39;http://localhost:8787/api/billing/setup-session&#39;");
  });

  it("completes through the API too, and refuses a session not yet completed", async () => {
    const owner = await signedIn("Card API");
    const session = await setupSession(owner);
    const early = await call(
      "POST",
      `/api/billing/setup-session/${session.id}/complete`,
      undefined,
      billed(owner),
    );
    expect(early.status).toBe(409);
    expect(early.body.error).toContain("not saved");
    await saveCardAtStripe(session.url, "tok_visa");
    const done = await call(
      "POST",
      `/api/billing/setup-session/${session.id}/complete`,
      undefined,
      billed(owner),
    );
    expect(done.status, JSON.stringify(done.body)).toBe(201);
    expect(done.body).toMatchObject({ card_last4: "4242", is_default: true });
    const bad = await call(
      "POST",
      "/api/billing/setup-session/not-a-session/complete",
      undefined,
      billed(owner),
    );
    expect(bad.status).toBe(400);
  });

  it("refuses another team's session id: a 404 page, no card recorded on either team", async () => {
    const victim = await signedIn("Card Victim");
    const attacker = await signedIn("Card Attacker");
    const victimSession = await setupSession(victim);
    const back = await saveCardAtStripe(victimSession.url);
    // the attacker has a customer of their own too (one session made), so the check is the customer's
    await setupSession(attacker);
    const stolen = await billedPage(back.slice(DASHBOARD_ORIGIN.length), attacker.session);
    expect(stolen.status).toBe(404);
    expect(stolen.text).toContain("not found for this team");
    const viaApi = await call(
      "POST",
      `/api/billing/setup-session/${victimSession.id}/complete`,
      undefined,
      billed(attacker),
    );
    expect(viaApi.status).toBe(404);
    expect(await cards(attacker)).toHaveLength(0);
    // a team that never made a session has no customer: refused all the same
    const fresh = await signedIn("Card Fresh");
    expect((await billedPage(back.slice(DASHBOARD_ORIGIN.length), fresh.session)).status).toBe(404);
    // the victim's own return still works afterwards
    expect((await billedPage(back.slice(DASHBOARD_ORIGIN.length), victim.session)).status).toBe(303);
    expect(await cards(victim)).toHaveLength(1);
  });

  it("is the owner's: a member gets 403 from the API and the return page, and sees no Add button", async () => {
    const { owner, member, team } = await teamFixture();
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: owner.token });
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    const made = await call("POST", "/api/billing/setup-session", undefined, billed(member));
    expect(made.status).toBe(403);
    const session = await setupSession(owner);
    const back = await saveCardAtStripe(session.url);
    const returned = await billedPage(back.slice(DASHBOARD_ORIGIN.length), member.token);
    expect(returned.status).toBe(403);
    expect((await billedPage("/app/billing", member.token)).text).not.toContain("Add a card");
  });

  it("answers a bad session id with a 400 page, sends the signed-out to sign in, and shows a fixed notice only", async () => {
    const owner = await signedIn("Card Odd");
    const bad = await billedPage("/app/billing/card-added?session_id=%3Cscript%3E", owner.session);
    expect(bad.status).toBe(400);
    expect(bad.text).not.toContain("<script>");
    const out = await billedPage("/app/billing/card-added?session_id=cs_test_x");
    expect(out.status).toBe(302);
    expect(out.headers.get("location")).toContain("/app/sign-in?next=");
    const odd = await billedPage("/app/billing?card=%3Cb%3Eowned%3C/b%3E", owner.session);
    expect(odd.text).not.toContain("owned");
    const cancelled = await billedPage("/app/billing?card=cancelled", owner.session);
    expect(cancelled.text).toContain("No card was added");
  });

  it("says clearly when no processor is configured", async () => {
    const owner = await signedIn("Card None");
    const res = await call("POST", "/api/billing/setup-session", undefined, { token: owner.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("no payment processor");
  });
});
