import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import {
  STRIPE_DOUBLE_KEY,
  STRIPE_DOUBLE_WEBHOOK_SECRET,
  type StripeDouble,
  startStripeDouble,
} from "../support/stripe";
import { signUp } from "./support/api";
import { dockerInspect } from "./support/docker";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * Billing enforcement on a real host (docs/billing.md "Suspension"): the Worker with a processor key
 * against the Stripe double, the agent and Docker. A declined card makes the team past_due at the
 * period's invoice, the cron suspends it seven days on, and the pod is stopped on its host (files
 * kept) and `suspended`; paying and resuming starts it again. The cron is fired as the runtime does,
 * at simulated instants.
 */
describe("billing: a suspended team's pods stop on their host and start again on resume", () => {
  let stack: Stack;
  let stripe: StripeDouble;
  let user: User;
  let name: string;
  const container = () => `${stack.prefix}-${name}`;

  const card = async (token: "tok_visa" | "tok_chargeDeclined") => {
    const res = await fetch(`${stripe.url}/v1/payment_methods`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${STRIPE_DOUBLE_KEY}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ type: "card", "card[token]": token }),
    });
    const pm = ((await res.json()) as { id: string }).id;
    const added = await user.api.post("/api/billing/payment-methods", { processor_payment_method_id: pm });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    return added.body as { id: string };
  };
  const cron = async (at: number) => {
    const fired = await fetch(`${stack.api}/cdn-cgi/handler/scheduled?time=${at}`);
    expect(fired.status, await fired.text()).toBe(200);
  };
  const subscriptionStatus = async () => (await user.api.get("/api/billing/subscription")).body.status;

  beforeAll(async () => {
    stripe = await startStripeDouble();
    stack = await startStack("bill", {
      vars: {
        STRIPE_SECRET_KEY: STRIPE_DOUBLE_KEY,
        STRIPE_WEBHOOK_SECRET: STRIPE_DOUBLE_WEBHOOK_SECRET,
        STRIPE_API_BASE: stripe.url,
      },
    });
    user = await signUp(stack.api, "Payer");
    name = `bill-${stack.prefix.slice(-4)}`;
    await waitForHostOnline(user.api);
  });

  afterAll(async () => {
    await stack?.stop();
    await stripe?.close();
  });

  it("past_due, then suspended: the running pod is stopped (files kept), 402 to start; paid and resumed, it serves again", {
    timeout: 240_000,
  }, async () => {
    expect((await user.api.post("/api/pods", { name, preset: "static" })).status).toBe(402);
    await card("tok_chargeDeclined");
    const created = await user.api.post("/api/pods", { name, preset: "static" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    await waitForPodStatus(user.api, name, "running");
    expect((await httpGet(stack.edgePort, `${name}.pods.localhost`)).status).toBe(200);

    // the period's invoice, the first of next month: the card is declined, the team past_due
    const now = new Date();
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 6);
    await cron(nextMonth);
    await waitFor("the team to be past_due", async () =>
      (await subscriptionStatus()) === "past_due" ? true : undefined,
    );
    expect((await user.api.get(`/api/pods/${name}`)).body.status).toBe("running");

    // past the seven days' grace: suspended, and the pod stopped on its host
    await cron(Math.max(nextMonth, Date.now()) + 8 * 86_400_000);
    const suspended = await waitForPodStatus(user.api, name, "suspended", 90_000);
    expect(suspended.status).toBe("suspended");
    expect(await subscriptionStatus()).toBe("suspended");
    const info = await dockerInspect("container", container());
    expect(info.State.Running).toBe(false); // stopped, not removed: its files are kept
    expect((await httpGet(stack.edgePort, `${name}.pods.localhost`)).status).not.toBe(200);
    const events = (await user.api.get(`/api/pods/${name}/events`)).body;
    const types = (events.events ?? events).map((e: { type: string }) => e.type);
    expect(types).toContain("suspended");

    // nothing of a suspended team runs: start and restart are 402, and the container stays down
    for (const action of ["start", "restart"]) {
      const res = await user.api.post(`/api/pods/${name}/${action}`);
      expect(res.status, action).toBe(402);
      expect(res.body.error).toMatch(/suspended/);
    }
    expect((await dockerInspect("container", container())).State.Running).toBe(false);
    expect((await user.api.post(`/api/pods/${name}/resize`, { plan_slug: "turbo" })).status).toBe(402);

    // resume before paying: 409 naming the invoice
    const early = await user.api.post("/api/billing/subscription/resume");
    expect(early.status).toBe(409);
    const [invoice] = early.body.unpaid_invoices as string[];

    // a good card, the invoice paid, resume: the pod starts again before the answer
    const good = await card("tok_visa");
    expect(
      (await user.api.post("/api/billing/payment-methods/default", { payment_method_id: good.id })).status,
    ).toBe(200);
    const paid = await user.api.post(`/api/billing/invoices/${invoice}/pay`);
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const resumed = await user.api.post("/api/billing/subscription/resume");
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.status).toBe("active");
    const back = await user.api.get(`/api/pods/${name}`);
    expect(back.body.status).toBe("running");
    expect((await dockerInspect("container", container())).State.Running).toBe(true);
    const page = await waitFor("the page to answer again", async () => {
      const r = await httpGet(stack.edgePort, `${name}.pods.localhost`);
      return r.status === 200 ? r : undefined;
    });
    expect(page.body).toContain("podhost");
  });
});
