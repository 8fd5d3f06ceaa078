import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STRIPE_DOUBLE_KEY,
  STRIPE_DOUBLE_WEBHOOK_SECRET,
  type StripeDouble,
  startStripeDouble,
} from "../support/stripe";
import { type ApiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { type Stack, startStack } from "./support/stack";

/**
 * Adding a card on the billing page in Debian's Chromium against the real stack: "Add a card" calls
 * the API, the browser goes to the Stripe double's hosted setup page, "Save card" there sends it back
 * to the dashboard's return handler, and the billing page lists the card as the default.
 */
describe("adding a card through Stripe's hosted page in a real browser", () => {
  let stripe: StripeDouble;
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let api: ApiClient;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    stripe = await startStripeDouble();
    [stack, browser] = await Promise.all([
      startStack("card", {
        publicUrl: true,
        vars: {
          STRIPE_SECRET_KEY: STRIPE_DOUBLE_KEY,
          STRIPE_WEBHOOK_SECRET: STRIPE_DOUBLE_WEBHOOK_SECRET,
          STRIPE_API_BASE: stripe.url,
        },
      }),
      launchChromium(),
    ]);
    const signedUp = await signUp(stack.api, "Card Owner");
    api = signedUp.api;
    context = await browser.newContext();
    // PUBLIC_URL is the Worker's own address here: the dashboard answers on that host only
    await context.addCookies([{ name: "pod_session", value: signedUp.token, url: stack.api }]);
    page = await context.newPage();
    page.on("console", (msg) => {
      if (msg.type() === "error") consoleErrors.push(msg.text());
    });
  }, 300_000);

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close();
    await stack?.stop();
    await stripe?.close();
  }, 120_000);

  it("clicks Add a card, saves one on Stripe's page and sees it listed as the default", async () => {
    expect((await page.goto(`${stack.api}/app/billing`))?.status()).toBe(200);
    await page.getByText("No card yet.").waitFor();
    await page.getByRole("button", { name: "Add a card" }).click();
    await page.waitForURL(`${stripe.url}/checkout/pay/**`, { timeout: 15_000 });
    await page.getByLabel("Card").selectOption("tok_mastercard");
    await page.getByRole("button", { name: "Save card" }).click();
    await page.waitForURL(`${stack.api}/app/billing?card=added`, { timeout: 15_000 });
    await page.getByText("Card added").waitFor();
    const row = page.locator("table tr", { hasText: "4444" });
    await expect(row.textContent()).resolves.toContain("default");
    const cards = await api.get("/api/billing/payment-methods");
    expect(cards.body).toHaveLength(1);
    expect(cards.body[0]).toMatchObject({ card_brand: "mastercard", card_last4: "4444", is_default: true });
    expect(consoleErrors).toEqual([]);
  }, 120_000);
});
