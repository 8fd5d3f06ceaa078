import { env } from "cloudflare:workers";
import type { SQL } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { dailyPrice, findPlan } from "../../shared/catalog";
import { createDb } from "../../worker/db/client";
import { accrualPageStatements, accrueTeamsPage } from "../../worker/services/billing/accrual";
import { accrueDay } from "../../worker/services/billing/job";
import { signPayload } from "../support/stripe";
import { FakeAgent, insertHost, insertPod, podEventRecords, podRecord } from "./support/agent";
import {
  addCard,
  billed,
  billingEnv,
  deliver,
  deliveries,
  insertCredit,
  lastDeliverySeq,
  runBillingAt,
  stripeCard,
} from "./support/billing";
import { call, registerUser, type TestUser } from "./support/client";
import { teamFixture } from "./support/teams";

/**
 * Billing per team against the Stripe double (test/support/stripe.ts), reached by the real SDK
 * through STRIPE_API_BASE. The processor key is sent per request (support/billing.ts): the rest of
 * the suite runs with enforcement off.
 */

afterEach(() => FakeAgent.closeAll());

const db = createDb(env.DB);
const LAUNCH = dailyPrice(findPlan("launch") ?? (undefined as never));
const BUILD = dailyPrice(findPlan("build") ?? (undefined as never));
const podName = () => `b${crypto.randomUUID().slice(0, 8)}`;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const DAY = 86_400_000;

async function switchTo(user: TestUser, teamId: string) {
  const res = await call("POST", "/api/teams/switch", { team_id: teamId }, { token: user.token });
  expect(res.status).toBe(200);
}

async function createPod(user: TestUser, hostId: string) {
  return call("POST", "/api/pods", { name: podName(), preset: "static", server_id: hostId }, billed(user));
}

const chargesOf = async (teamId: string) =>
  (
    await env.DB.prepare(
      "SELECT pod_id, day, plan_slug, amount FROM pod_charges WHERE team_id = ? ORDER BY day",
    )
      .bind(teamId)
      .all<{ pod_id: string; day: string; plan_slug: string; amount: number }>()
  ).results;

describe("without a processor key", () => {
  it("says processor none and enforces nothing, but the team has its subscription and its pods are accounted", async () => {
    const user = await registerUser();
    const res = await call("GET", "/api/billing/subscription", undefined, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      processor: "none",
      status: "active",
      plan_slug: "launch",
      team_id: user.user.active_team_id,
    });
    expect(res.body.id).toMatch(/^sub_/);
    expect(res.body.created_at).toEqual(expect.any(String));
    // the same subscription on every read (made with the team, not on the first look)
    const again = await call("GET", "/api/billing/subscription", undefined, { token: user.token });
    expect(again.body.id).toBe(res.body.id);

    // a pod created today is listed at its plan's daily rate before any accrual ran
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id });
    const upcoming = await call("GET", "/api/billing/upcoming", undefined, { token: user.token });
    expect(upcoming.status).toBe(200);
    expect(upcoming.body.charges).toEqual([
      {
        pod_name: pod.name,
        pod_status: "running",
        plan_slug: "launch",
        plan_name: "Launch",
        monthly_rate: 500,
        daily_rate: LAUNCH,
        active_days: 1,
        amount: LAUNCH,
      },
    ]);
    expect(upcoming.body).toMatchObject({ subtotal: LAUNCH, estimated_total: LAUNCH });

    // cancel with a pod left: 409 naming it (not 404 "no subscription")
    const cancel = await call("POST", "/api/billing/subscription/cancel", undefined, { token: user.token });
    expect(cancel.status).toBe(409);
    expect(cancel.body.error).toContain(pod.name);
  });

  it("gives a team made through the API its subscription too", async () => {
    const { owner, team } = await teamFixture();
    await switchTo(owner, team.id);
    const res = await call("GET", "/api/billing/subscription", undefined, { token: owner.token });
    expect(res.body).toMatchObject({ team_id: team.id, status: "active", plan_slug: "launch" });
    const row = await env.DB.prepare("SELECT id FROM subscriptions WHERE team_id = ?").bind(team.id).first();
    expect(row?.id).toBe(res.body.id);
  });
});

describe("cards and the 402", () => {
  it("refuses a pod without a card (402), takes the card's details from Stripe, then creates the pod", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    await FakeAgent.online(host);
    const refused = await createPod(user, host.id);
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatch(/payment method/);

    const intent = await call("POST", "/api/billing/setup-intent", undefined, billed(user));
    expect(intent.status).toBe(200);
    expect(intent.body.client_secret).toMatch(/^seti_.+_secret_/);

    const card = await addCard(user, "tok_mastercard");
    expect(card).toMatchObject({ card_brand: "mastercard", card_last4: "4444", is_default: true });
    const sub = await call("GET", "/api/billing/subscription", undefined, billed(user));
    expect(sub.body.processor).toBe("stripe");

    const created = await createPod(user, host.id);
    expect(created.status, JSON.stringify(created.body)).toBe(202);
  });

  it("keeps cards per team: a member cannot add one, a card of another team is refused, the default moves on delete", async () => {
    const { owner, member, team } = await teamFixture();
    const stranger = await registerUser();
    const pm = await stripeCard("tok_visa");
    await switchTo(member, team.id);
    const asMember = await call(
      "POST",
      "/api/billing/payment-methods",
      { processor_payment_method_id: pm },
      billed(member),
    );
    expect(asMember.status).toBe(403);
    expect((await call("POST", "/api/billing/setup-intent", undefined, billed(member))).status).toBe(403);

    const first = await addCard(stranger, "tok_visa");
    const second = await addCard(stranger, "tok_mastercard");
    expect(second.is_default).toBe(false);
    // the stranger's card, attached to their customer, cannot be taken by another team
    const stolen = await call(
      "POST",
      "/api/billing/payment-methods",
      { processor_payment_method_id: first.processorId },
      billed(owner),
    );
    expect(stolen.status).toBe(409);
    expect(
      (await call("DELETE", `/api/billing/payment-methods/${first.id}`, undefined, billed(owner))).status,
    ).toBe(404);

    const removed = await call(
      "DELETE",
      `/api/billing/payment-methods/${first.id}`,
      undefined,
      billed(stranger),
    );
    expect(removed.body).toEqual({ status: "deleted" });
    const left = await call("GET", "/api/billing/payment-methods", undefined, billed(stranger));
    expect(left.body).toHaveLength(1);
    expect(left.body[0]).toMatchObject({ id: second.id, is_default: true });

    const bad = await call(
      "POST",
      "/api/billing/payment-methods",
      { processor_payment_method_id: "pm_nope" },
      billed(owner),
    );
    expect(bad.status).toBe(400);
    const empty = await call("POST", "/api/billing/payment-methods", {}, billed(owner));
    expect(empty.status).toBe(400);
  });

  it("lists the caller's cards on their other teams, not other people's", async () => {
    const { owner, team } = await teamFixture();
    await addCard(owner, "tok_visa"); // on the owner's personal (active) team
    await switchTo(owner, team.id);
    const others = await call("GET", "/api/billing/payment-methods/other-teams", undefined, billed(owner));
    expect(others.status).toBe(200);
    expect(others.body).toHaveLength(1);
    expect(others.body[0]).toMatchObject({ card_last4: "4242" });
    expect(others.body[0].team_id).not.toBe(team.id);
  });
});

describe("the daily accrual", () => {
  it("charges every live pod once a day: stopped pods too, a resize at the new rate, deletion ends it; re-runs charge nothing twice", async () => {
    const user = await registerUser();
    const teamId = user.user.active_team_id;
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const a = await insertPod({ hostId: host.id, teamId, status: "running" });
    const b = await insertPod({ hostId: host.id, teamId, status: "running" });
    const base = Date.UTC(2100, 2, 10, 6);
    // The pod changes go through the API, their host calls answered by the test's agent.
    const through = async (method: string, path: string, body: unknown, op: string, data: unknown) => {
      const pending = call(method, path, body, { token: user.token });
      const c = await agent.next("control:call", 5_000);
      expect(c.op).toBe(op);
      agent.ok(c, data);
      const res = await pending;
      expect(res.status, `${method} ${path}`).toBe(200);
    };

    await runBillingAt(base); // charges 2100-03-09
    await through("POST", `/api/pods/${a.name}/stop`, undefined, "pod.stop", {
      name: a.name,
      state: "stopped",
      ip: null,
    });
    await runBillingAt(base + DAY); // 03-10: the stopped pod is charged
    await through("POST", `/api/pods/${b.name}/resize`, { plan_slug: "build" }, "pod.resize", {
      name: b.name,
      state: "running",
      ip: "10.0.0.2",
    });
    await runBillingAt(base + 2 * DAY); // 03-11: b at the build rate
    await through("DELETE", `/api/pods/${a.name}`, undefined, "pod.delete", { deleted: true });
    // The test's days are in 2100: the deletion's own time moves to 03-11 with it.
    expect((await podRecord(a.id))?.status).toBe("deleted");
    await env.DB.prepare("UPDATE pods SET deleted_at = ? WHERE id = ?")
      .bind(new Date(base + 2 * DAY + 3_600_000).toISOString(), a.id)
      .run();
    await runBillingAt(base + 3 * DAY); // 03-12: a was deleted during that day: still charged
    await runBillingAt(base + 4 * DAY); // 03-13: a is gone

    // the cron run twice, and a page retried from the start: nothing more
    await runBillingAt(base + 4 * DAY);
    await env.DB.prepare("DELETE FROM billing_job_cursors").run();
    await runBillingAt(base + 4 * DAY);
    const retried = await accrueTeamsPage(db, day(base + 3 * DAY), "", 1_000);
    expect(retried.charged).toBe(0);
    expect(await accrueDay(db, day(base))).toBe(true);

    const charges = await chargesOf(teamId);
    const ofA = charges.filter((c) => c.pod_id === a.id);
    const ofB = charges.filter((c) => c.pod_id === b.id);
    expect(ofA.map((c) => c.day)).toEqual(["2100-03-09", "2100-03-10", "2100-03-11", "2100-03-12"]);
    expect(ofA.every((c) => c.amount === LAUNCH)).toBe(true);
    expect(ofB.map((c) => [c.day, c.amount])).toEqual([
      ["2100-03-09", LAUNCH],
      ["2100-03-10", LAUNCH],
      ["2100-03-11", BUILD],
      ["2100-03-12", BUILD],
      ["2100-03-13", BUILD],
    ]);

    await insertCredit(teamId, 10, null);
    const upcoming = await call("GET", "/api/billing/upcoming", undefined, billed(user));
    expect(upcoming.status).toBe(200);
    const byPod = Object.fromEntries(upcoming.body.charges.map((c: { pod_name: string }) => [c.pod_name, c]));
    expect(byPod[a.name]).toMatchObject({ active_days: 4, amount: 4 * LAUNCH, pod_status: "deleted" });
    // b lives on: today (the day in progress, charged when it ends) is counted at its plan
    expect(byPod[b.name]).toMatchObject({
      active_days: 6,
      amount: 2 * LAUNCH + 4 * BUILD,
      plan_slug: "build",
    });
    const subtotal = 6 * LAUNCH + 4 * BUILD;
    expect(upcoming.body).toMatchObject({
      subtotal,
      credits_available: 10,
      estimated_total: subtotal - 10,
    });
  });

  it("reads a bounded page of teams, never the fleet", async () => {
    const teams = [await registerUser(), await registerUser(), await registerUser()];
    for (const t of teams) await insertPod({ hostId: null, teamId: t.user.active_team_id });
    const d = "2100-05-05";
    const first = await accrueTeamsPage(db, d, "", 1);
    expect(first.teams).toBe(1);
    expect(first.lastTeamId).not.toBeNull();
    // a page short of full was the last: the day ends without a round trip for an empty page
    const rest = await accrueTeamsPage(db, d, "", 1_000_000);
    expect(rest.lastTeamId).toBeNull();
    expect(rest.charged).toBeGreaterThanOrEqual(2);
  });

  it("reads which teams a page holds from an index alone: each pod's row is read once, by the charge", async () => {
    const plan = async (query: SQL) => {
      const { sql: text, params } = db.run(query).getQuery();
      const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${text}`)
        .bind(...params)
        .all<{ detail: string }>();
      return results.map((r) => r.detail).filter((d) => /\bpods\b/.test(d));
    };
    const { charge, end } = accrualPageStatements("2100-05-06", "team_a", 100);
    // where the page ends: no pod row read, only index entries
    const ends = await plan(end);
    expect(ends.length).toBeGreaterThan(0);
    for (const step of ends) expect(step).toMatch(/^SEARCH pods USING COVERING INDEX/);
    // the charge: the page's pods by their team's index range, their rows once; its end as above
    const charges = await plan(charge);
    expect(charges.filter((d) => !d.includes("COVERING INDEX"))).toEqual([
      expect.stringMatching(/^SEARCH pods USING INDEX pods_team_\w+ \(team_id>\? AND team_id<\?\)$/),
    ]);
  });
});

describe("invoices", () => {
  it("makes an invoice per team at the period's end, a line per pod, credits first (soonest expiring), the rest charged", async () => {
    const user = await registerUser();
    const teamId = user.user.active_team_id;
    await addCard(user, "tok_visa");
    const pod = await insertPod({ hostId: null, teamId });
    for (const d of ["2101-01-10", "2101-01-11", "2101-01-12"]) await accrueDay(db, d);
    await env.DB.prepare("UPDATE pods SET status = 'deleted', deleted_at = ? WHERE id = ?")
      .bind("2101-01-13T00:00:00.000Z", pod.id)
      .run();
    const later = await insertCredit(teamId, 10, "2199-01-01T00:00:00.000Z");
    const sooner = await insertCredit(teamId, 20, "2150-01-01T00:00:00.000Z");
    await insertCredit(teamId, 500, "2001-01-01T00:00:00.000Z"); // expired: never used

    await runBillingAt(Date.UTC(2101, 1, 1, 6));
    await runBillingAt(Date.UTC(2101, 1, 1, 7)); // again: no second invoice

    const list = await call("GET", "/api/billing/invoices", undefined, billed(user));
    expect(list.body).toHaveLength(1);
    const [inv] = list.body;
    expect(inv).toMatchObject({
      status: "paid",
      subtotal: 3 * LAUNCH,
      credits_applied: 30,
      amount_due: 3 * LAUNCH - 30,
      amount_paid: 3 * LAUNCH - 30,
      period_start: "2101-01-01T00:00:00.000Z",
      period_end: "2101-02-01T00:00:00.000Z",
    });
    const detail = await call("GET", `/api/billing/invoices/${inv.id}`, undefined, billed(user));
    expect(detail.body.lines).toEqual([
      { pod_name: pod.name, plan_slug: "launch", days: 3, amount: 3 * LAUNCH },
    ]);
    const credits = await call("GET", "/api/billing/credits", undefined, billed(user));
    const remaining = Object.fromEntries(
      credits.body.credits.map((c: { id: string; remaining: number }) => [c.id, c.remaining]),
    );
    expect(remaining[sooner]).toBe(0);
    expect(remaining[later]).toBe(0);
    expect(credits.body.available).toBe(0);
    expect((await call("GET", "/api/billing/invoices/open", undefined, billed(user))).body).toEqual([]);

    const outsider = await registerUser();
    expect((await call("GET", `/api/billing/invoices/${inv.id}`, undefined, billed(outsider))).status).toBe(
      403,
    );
    expect(
      (await call("POST", `/api/billing/invoices/${inv.id}/pay`, undefined, billed(outsider))).status,
    ).toBe(403);
    expect((await call("GET", "/api/billing/invoices/inv_nope", undefined, billed(outsider))).status).toBe(
      404,
    );
  });

  it("a failed payment: past_due, suspended after the grace period, 402, pay with a new card, resume", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    await FakeAgent.online(host);
    const teamId = user.user.active_team_id;
    await addCard(user, "tok_chargeDeclined");
    await insertPod({ hostId: null, teamId });
    await accrueDay(db, "2102-01-05");
    await runBillingAt(Date.UTC(2102, 1, 1, 6));

    const open = await call("GET", "/api/billing/invoices/open", undefined, billed(user));
    expect(open.body).toHaveLength(1);
    const inv = open.body[0];
    expect((await call("GET", "/api/billing/subscription", undefined, billed(user))).body.status).toBe(
      "past_due",
    );
    // past_due still creates pods
    expect((await createPod(user, host.id)).status).toBe(202);

    const declined = await call("POST", `/api/billing/invoices/${inv.id}/pay`, undefined, billed(user));
    expect(declined.status).toBe(400);
    expect(declined.body.hosted_invoice_url).toMatch(/^https:\/\//);

    await runBillingAt(Date.UTC(2102, 1, 5, 6)); // within the grace period
    expect((await call("GET", "/api/billing/subscription", undefined, billed(user))).body.status).toBe(
      "past_due",
    );
    await runBillingAt(Date.UTC(2102, 1, 9, 6));
    expect((await call("GET", "/api/billing/subscription", undefined, billed(user))).body.status).toBe(
      "suspended",
    );
    const refused = await createPod(user, host.id);
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatch(/suspended/);

    const early = await call("POST", "/api/billing/subscription/resume", undefined, billed(user));
    expect(early.status).toBe(409);
    expect(early.body.unpaid_invoices).toEqual([inv.id]);

    const good = await addCard(user, "tok_visa");
    await call("POST", "/api/billing/payment-methods/default", { payment_method_id: good.id }, billed(user));
    const paid = await call("POST", `/api/billing/invoices/${inv.id}/pay`, undefined, billed(user));
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ status: "paid", amount_paid: inv.amount_due });
    expect(inv.amount_due % LAUNCH).toBe(0);
    const resumed = await call("POST", "/api/billing/subscription/resume", undefined, billed(user));
    expect(resumed.body.status).toBe("active");
    expect((await createPod(user, host.id)).status).toBe(202);
  });
});

describe("subscriptions", () => {
  it("subscribe 201 (the team's own subscription takes the plan), change plan, cancel refused with pods (409) and for a member (403), then cancelled and never resumed", async () => {
    const { owner, member, team } = await teamFixture();
    await switchTo(owner, team.id);
    await switchTo(member, team.id);
    const before = await call("GET", "/api/billing/subscription", undefined, billed(owner));
    const sub = await call("POST", "/api/billing/subscribe", { plan_slug: "build" }, billed(owner));
    expect(sub.status).toBe(201);
    expect(sub.body).toMatchObject({
      status: "active",
      plan_slug: "build",
      team_id: team.id,
      id: before.body.id,
    });
    const twice = await call("POST", "/api/billing/subscribe", { plan_slug: "build" }, billed(owner));
    expect(twice.status).toBe(201);
    expect(twice.body.id).toBe(before.body.id);
    expect(
      (await call("POST", "/api/billing/subscribe", { plan_slug: "build" }, billed(member))).status,
    ).toBe(403);
    expect((await call("POST", "/api/billing/subscribe", { plan_slug: "gold" }, billed(owner))).status).toBe(
      400,
    );
    const changed = await call("PUT", "/api/billing/subscription/plan", { plan_slug: "grow" }, billed(owner));
    expect(changed.body.plan_slug).toBe("grow");

    const pod = await insertPod({ hostId: null, teamId: team.id });
    const byMember = await call("POST", "/api/billing/subscription/cancel", undefined, billed(member));
    expect(byMember.status).toBe(403);
    const refused = await call("POST", "/api/billing/subscription/cancel", undefined, billed(owner));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toContain(pod.name);

    await env.DB.prepare("UPDATE pods SET status = 'deleted', deleted_at = ? WHERE id = ?")
      .bind(new Date().toISOString(), pod.id)
      .run();
    const cancelled = await call("POST", "/api/billing/subscription/cancel", undefined, billed(owner));
    expect(cancelled.body).toEqual({ status: "cancelled" });
    const resumed = await call("POST", "/api/billing/subscription/resume", undefined, billed(owner));
    expect(resumed.status).toBe(409);
    expect((await call("GET", "/api/billing/subscription", undefined, billed(member))).body.status).toBe(
      "cancelled",
    );
  });
});

describe("nothing runs unpaid", () => {
  const planOf = async (podId: string) =>
    (
      await env.DB.prepare("SELECT plan_slug FROM pods WHERE id = ?")
        .bind(podId)
        .first<{ plan_slug: string }>()
    )?.plan_slug;
  const setPlan = (podId: string, plan: string) =>
    env.DB.prepare("UPDATE pods SET plan_slug = ? WHERE id = ?").bind(plan, podId).run();
  const completedBackup = async (podId: string) => {
    const id = `bk_${crypto.randomUUID().slice(0, 12)}`;
    const at = new Date().toISOString();
    await env.DB.prepare(
      `INSERT INTO backups (id, pod_id, status, trigger, size, object_key, created_at, completed_at)
       VALUES (?, ?, 'completed', 'manual', 10, ?, ?, ?)`,
    )
      .bind(id, podId, `backups/x/${id}.tar.gz`, at, at)
      .run();
    return id;
  };

  it("the attacker's path: a Launch pod with a card, the card deleted, resized to the largest plan — refused at every step", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const teamId = user.user.active_team_id;
    const card = await addCard(user, "tok_visa");
    const pod = await insertPod({ hostId: host.id, teamId, status: "running" });

    // the last card of a team with pods stays: 409 naming them
    const removeLast = await call(
      "DELETE",
      `/api/billing/payment-methods/${card.id}`,
      undefined,
      billed(user),
    );
    expect(removeLast.status).toBe(409);
    expect(removeLast.body.error).toContain(pod.name);
    expect((await call("GET", "/api/billing/payment-methods", undefined, billed(user))).body).toHaveLength(1);

    // one of two cards may go
    const second = await addCard(user, "tok_mastercard");
    const removeOne = await call(
      "DELETE",
      `/api/billing/payment-methods/${card.id}`,
      undefined,
      billed(user),
    );
    expect(removeOne.status).toBe(200);

    // the card gone all the same (detached at Stripe: the webhook forgets it): no larger plan
    await env.DB.prepare("DELETE FROM payment_methods WHERE id = ?").bind(second.id).run();
    const up = await call("POST", `/api/pods/${pod.name}/resize`, { plan_slug: "turbo" }, billed(user));
    expect(up.status).toBe(402);
    expect(up.body.error).toMatch(/payment method/);
    await agent.expectNone("control:call");
    expect(await planOf(pod.id)).toBe("launch");
    // no clone either
    const clone = await call("POST", `/api/pods/${pod.name}/clone`, { new_name: podName() }, billed(user));
    expect(clone.status).toBe(402);

    // a smaller plan is always allowed (it costs less)
    await setPlan(pod.id, "grow");
    const down = call("POST", `/api/pods/${pod.name}/resize`, { plan_slug: "build" }, billed(user));
    const resize = await agent.next("control:call", 5_000);
    expect(resize.op).toBe("pod.resize");
    agent.ok(resize, { name: pod.name, state: "running", ip: "10.0.0.2" });
    expect((await down).status).toBe(200);

    // database services and restores need a payable team too
    const service = await call(
      "POST",
      `/api/pods/${pod.name}/services`,
      { service_type: "redis" },
      billed(user),
    );
    expect(service.status).toBe(402);
    const backupId = await completedBackup(pod.id);
    const restore = await call(
      "POST",
      `/api/pods/${pod.name}/backups/${backupId}/restore`,
      undefined,
      billed(user),
    );
    expect(restore.status).toBe(402);
    await agent.expectNone("control:call");

    // credits that cover the period's estimate pay as a card would
    await insertCredit(teamId, 1_000_000, null);
    const paidUp = call("POST", `/api/pods/${pod.name}/resize`, { plan_slug: "scale" }, billed(user));
    const resized = await agent.next("control:call", 5_000);
    expect(resized.op).toBe("pod.resize");
    agent.ok(resized, { name: pod.name, state: "running", ip: "10.0.0.2" });
    expect((await paidUp).status).toBe(200);
    expect(await planOf(pod.id)).toBe("scale");
  });

  it("lets the last card go when the team has no pods, or when its credits cover the period", async () => {
    const user = await registerUser();
    const teamId = user.user.active_team_id;
    const lonely = await addCard(user, "tok_visa");
    expect(
      (await call("DELETE", `/api/billing/payment-methods/${lonely.id}`, undefined, billed(user))).status,
    ).toBe(200);

    const card = await addCard(user, "tok_visa");
    await insertPod({ hostId: null, teamId });
    await insertCredit(teamId, 1, null); // a cent does not cover a month of a pod
    expect(
      (await call("DELETE", `/api/billing/payment-methods/${card.id}`, undefined, billed(user))).status,
    ).toBe(409);
    await insertCredit(teamId, 31 * LAUNCH, null);
    expect(
      (await call("DELETE", `/api/billing/payment-methods/${card.id}`, undefined, billed(user))).status,
    ).toBe(200);
  });

  it("two parallel deletes of a team's two cards: one goes, the other is the 409, a card remains", async () => {
    const user = await registerUser();
    const teamId = user.user.active_team_id;
    const [first, second] = [await addCard(user, "tok_visa"), await addCard(user, "tok_mastercard")];
    const pod = await insertPod({ hostId: null, teamId });
    const answers = await Promise.all(
      [first, second].map((c) =>
        call("DELETE", `/api/billing/payment-methods/${c.id}`, undefined, billed(user)),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect(answers.find((a) => a.status === 409)?.body.error).toContain(pod.name);
    const left = (await call("GET", "/api/billing/payment-methods", undefined, billed(user))).body;
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ is_default: true });
  });

  it("a suspended team's running pods are stopped and `suspended` (event), cannot be started (402), and start again on resume", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const teamId = user.user.active_team_id;
    await addCard(user, "tok_chargeDeclined");
    const running = await insertPod({ hostId: host.id, teamId, status: "running" });
    const stopped = await insertPod({ hostId: host.id, teamId, status: "stopped", ip: null });
    await accrueDay(db, "2104-01-05");
    await runBillingAt(Date.UTC(2104, 1, 1, 6)); // the invoice is declined: past_due
    expect((await call("GET", "/api/billing/subscription", undefined, billed(user))).body.status).toBe(
      "past_due",
    );
    expect((await podRecord(running.id))?.status).toBe("running");

    // past the grace period: suspended, and the running pod is stopped on its host
    const cron = runBillingAt(Date.UTC(2104, 1, 9, 6));
    const stop = await agent.next("control:call", 10_000);
    expect(stop).toMatchObject({ op: "pod.stop", params: { name: running.name } });
    agent.ok(stop, { name: running.name, state: "stopped", ip: null });
    await cron;
    expect((await call("GET", "/api/billing/subscription", undefined, billed(user))).body.status).toBe(
      "suspended",
    );
    expect((await podRecord(running.id))?.status).toBe("suspended");
    expect((await podRecord(stopped.id))?.status).toBe("stopped");
    const events = await podEventRecords(running.id);
    expect(events.map((e) => e.type)).toContain("suspended");
    const listed = await call("GET", "/api/pods", undefined, billed(user));
    const statuses = Object.fromEntries(
      (listed.body.pods ?? listed.body).map((p: { name: string; status: string }) => [p.name, p.status]),
    );
    expect(statuses).toEqual({ [running.name]: "suspended", [stopped.name]: "stopped" });

    // the owner tries to start it again, or the stopped one: 402, the host is not asked
    for (const name of [running.name, stopped.name]) {
      for (const action of ["start", "restart"]) {
        const res = await call("POST", `/api/pods/${name}/${action}`, undefined, billed(user));
        expect(res.status, `${action} ${name}`).toBe(402);
        expect(res.body.error).toMatch(/suspended/);
      }
    }
    // nor through what starts a stopped pod first (reload)
    const reload = await call("POST", `/api/pods/${stopped.name}/reload`, undefined, billed(user));
    expect(reload.status).toBe(402);
    await agent.expectNone("control:call");
    // a later cron run has nothing more to stop
    await runBillingAt(Date.UTC(2104, 1, 10, 6));
    await agent.expectNone("control:call");

    // the team pays and resumes: the suspended pod starts again, the one stopped by hand stays stopped
    const [inv] = (await call("GET", "/api/billing/invoices/open", undefined, billed(user))).body;
    const good = await addCard(user, "tok_visa");
    await call("POST", "/api/billing/payment-methods/default", { payment_method_id: good.id }, billed(user));
    expect((await call("POST", `/api/billing/invoices/${inv.id}/pay`, undefined, billed(user))).status).toBe(
      200,
    );
    const resuming = call("POST", "/api/billing/subscription/resume", undefined, billed(user));
    const start = await agent.next("control:call", 10_000);
    expect(start).toMatchObject({ op: "pod.start", params: { name: running.name } });
    agent.ok(start, { name: running.name, state: "running", ip: "10.0.0.9" });
    const resumed = await resuming;
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe("active");
    expect(await podRecord(running.id)).toMatchObject({ status: "running", ip: "10.0.0.9" });
    expect((await podRecord(stopped.id))?.status).toBe("stopped");
    await agent.expectNone("control:call");
  }, 30_000);

  it("a pod whose host could not stop it stays running, and the next cron run suspends it", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const teamId = user.user.active_team_id;
    const pod = await insertPod({ hostId: host.id, teamId, status: "running" });
    await env.DB.prepare("UPDATE subscriptions SET status = 'suspended' WHERE team_id = ?")
      .bind(teamId)
      .run();
    const first = runBillingAt(Date.UTC(2104, 5, 1, 6));
    const failed = await agent.next("control:call", 10_000);
    agent.fail(failed, "unavailable", "the engine is busy");
    await first;
    expect((await podRecord(pod.id))?.status).toBe("running");
    const second = runBillingAt(Date.UTC(2104, 5, 1, 7));
    const retried = await agent.next("control:call", 10_000);
    expect(retried).toMatchObject({ op: "pod.stop", params: { name: pod.name } });
    agent.ok(retried, { name: pod.name, state: "stopped", ip: null });
    await second;
    expect((await podRecord(pod.id))?.status).toBe("suspended");

    // active again by other means (an operator): the cron starts it
    await env.DB.prepare("UPDATE subscriptions SET status = 'active' WHERE team_id = ?").bind(teamId).run();
    const third = runBillingAt(Date.UTC(2104, 5, 1, 8));
    const start = await agent.next("control:call", 10_000);
    expect(start).toMatchObject({ op: "pod.start", params: { name: pod.name } });
    agent.ok(start, { name: pod.name, state: "running", ip: "10.0.0.2" });
    await third;
    expect((await podRecord(pod.id))?.status).toBe("running");
  }, 30_000);
});

describe("Stripe's webhooks", () => {
  it("refuses a bad signature (400), ignores a replay, and applies events in any order", async () => {
    const user = await registerUser();
    const teamId = user.user.active_team_id;
    await addCard(user, "tok_chargeDeclined");
    await insertPod({ hostId: null, teamId });
    await accrueDay(db, "2103-01-07");
    const mark = await lastDeliverySeq();
    await runBillingAt(Date.UTC(2103, 1, 1, 6));
    const [inv] = (await call("GET", "/api/billing/invoices/open", undefined, billed(user))).body;
    expect(inv).toBeDefined();

    // the team pays with a good card; the double queued payment_failed (first try) then paid
    const good = await addCard(user, "tok_visa");
    await call("POST", "/api/billing/payment-methods/default", { payment_method_id: good.id }, billed(user));
    await env.DB.prepare(
      "UPDATE subscriptions SET status = 'active', past_due_since = NULL WHERE team_id = ?",
    )
      .bind(teamId)
      .run();
    // (other teams of this file are invoiced by the same run: only this team's invoice is looked at)
    const queued = (await deliveries(mark)).filter(
      (d) =>
        d.type === "invoice.payment_failed" &&
        JSON.parse(d.payload).data.object.metadata.invoice_id === inv.id,
    );
    expect(queued.length).toBeGreaterThan(0);
    const failed = queued[0];
    if (!failed) throw new Error("no payment_failed delivery");

    const forged = await deliver({
      payload: failed.payload,
      signature: signPayload(failed.payload, "whsec_wrong"),
    });
    expect(forged.status).toBe(400);
    const tampered = await deliver({
      payload: failed.payload.replace('"livemode": false', '"livemode": true'),
      signature: failed.signature,
    });
    expect(tampered.status).toBe(400);
    expect((await deliver({ payload: failed.payload, signature: "" })).status).toBe(400);

    // pay at Stripe directly (as through the hosted invoice page): only the webhook tells the service
    const stripeInvoiceId = JSON.parse(failed.payload).data.object.id as string;
    const payAtStripe = await fetch(`${env.STRIPE_API_BASE}/v1/invoices/${stripeInvoiceId}/pay`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${billingEnv.STRIPE_SECRET_KEY}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ payment_method: good.processorId }),
    });
    expect(payAtStripe.status).toBe(200);
    const paidDelivery = (await deliveries(mark)).find(
      (d) => d.type === "invoice.paid" && JSON.parse(d.payload).data.object.id === stripeInvoiceId,
    );
    if (!paidDelivery) throw new Error("no invoice.paid delivery");

    // out of order: paid first, then the older failure, which must not make the team past_due
    expect((await deliver(paidDelivery)).body).toMatchObject({ status: "processed" });
    expect((await deliver(failed)).body).toMatchObject({ status: "ignored" });
    expect((await deliver(paidDelivery)).body).toMatchObject({ status: "duplicate" });
    const after = await call("GET", `/api/billing/invoices/${inv.id}`, undefined, billed(user));
    expect(after.body.status).toBe("paid");
    expect((await call("GET", "/api/billing/subscription", undefined, billed(user))).body.status).toBe(
      "active",
    );
  });

  it("keeps a card's expiry as Stripe has it and forgets a card detached at Stripe", async () => {
    const user = await registerUser();
    const card = await addCard(user, "tok_visa");
    const mark = await lastDeliverySeq();
    await fetch(`${env.STRIPE_API_BASE}/__double/payment_methods/${card.processorId}/expiry`, {
      method: "POST",
      body: JSON.stringify({ exp_month: 1, exp_year: 2040 }),
    });
    for (const d of await deliveries(mark)) await deliver(d);
    const list = await call("GET", "/api/billing/payment-methods", undefined, billed(user));
    expect(list.body[0]).toMatchObject({ card_exp_month: 1, card_exp_year: 2040 });
  });
});
