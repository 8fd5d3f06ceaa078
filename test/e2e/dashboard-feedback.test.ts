import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DnsDouble, startDnsDouble } from "../support/dns";
import { type ApiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * A pod's Domains and Feedback tabs in Debian's Chromium against the real stack (Worker, agent,
 * Docker, ingress): the owner adds a domain and sees the TXT record to publish; enables feedback
 * in the dashboard, a visitor pins a comment on the pod's page through the widget the ingress
 * injects, and the owner triages it in the inbox. A visitor's markup stays text all the way.
 */

const POD = "dash-fb";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}
const HOSTILE = '<img src=x onerror="window.__pwned = 1">Button broken';

describe("a pod's Domains and Feedback tabs in a real browser", () => {
  let stack: Stack;
  let dns: DnsDouble;
  let api: ApiClient;
  let browser: Browser;
  let owner: BrowserContext;
  let sessionToken: string;
  let page: Page;
  const contexts: BrowserContext[] = [];
  /** what the dashboard's pages logged as errors (a CSP refusal among them) */
  const consoleErrors: string[] = [];

  const app = (path: string) => `${stack.api}/app${path}`;
  const site = (path = "/") => `http://${POD}.pods.localhost:${stack.ingressPort}${path}`;

  beforeAll(async () => {
    dns = await startDnsDouble();
    [stack, browser] = await Promise.all([
      // domain verification asks the DNS-over-HTTPS double on loopback (test/support/dns.ts)
      startStack("dfb", { publicUrl: true, vars: { DNS_RESOLVER_URL: dns.resolverUrl } }),
      launchChromium(),
    ]);
    const signedUp = await signUp(stack.api, "Feedback Owner");
    api = signedUp.api;
    sessionToken = signedUp.token;
    await waitForHostOnline(api);
    await createRunningPods(api, [[POD, "static"]]);
    owner = await browser.newContext();
    contexts.push(owner);
    // PUBLIC_URL is the Worker's own address here: the dashboard answers on that host only
    await owner.addCookies([{ name: "pod_session", value: signedUp.token, url: stack.api }]);
    page = await owner.newPage();
    page.on("console", (msg) => {
      // a refused API call is the browser's "Failed to load resource" line: the form shows it
      if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) {
        consoleErrors.push(msg.text());
      }
    });
    page.on("dialog", (dialog) => void dialog.accept());
  }, 300_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await stack?.stop();
    await dns?.close();
  }, 120_000);

  it("adds a domain, shows the TXT record to create exactly as the API has it, verifies and removes it", async () => {
    expect((await page.goto(app(`/pods/${POD}/domains`)))?.status()).toBe(200);
    await page.getByText("No custom domains yet.").waitFor();
    await page.getByLabel("Domain").fill("Shop.Example.COM");
    await page.getByRole("button", { name: "Add domain" }).click();
    await page.getByRole("heading", { name: "shop.example.com" }).waitFor({ timeout: 15_000 });

    const listed = await api.get(`/api/pods/${POD}/domains`);
    const [domain] = listed.body.domains;
    expect(domain.verification.name).toBe("_podhost-verify.shop.example.com");
    const record = page.locator(".txt-record code");
    await expect(record.allTextContents()).resolves.toEqual([
      "TXT",
      domain.verification.name,
      domain.verification.value,
    ]);
    await expect(page.locator(".domain .badge").textContent()).resolves.toBe("pending");
    // verifying with no such record published: the API's 400 shows in the form, the page stays
    await page.getByRole("button", { name: "Verify shop.example.com" }).click();
    await page.locator(".domain [data-error]:not([hidden])").waitFor({ timeout: 15_000 });
    await expect(page.locator(".domain [data-error]:not([hidden])").textContent()).resolves.toMatch(
      /found no TXT record.* \(HTTP 400\)$/,
    );
    // published as the page shows it: verified
    dns.setTxt(domain.verification.name, [domain.verification.value]);
    await page.getByRole("button", { name: "Verify shop.example.com" }).click();
    await page.locator(".domain .badge", { hasText: "verified" }).waitFor({ timeout: 20_000 });
    await expect(page.locator(".txt-record").count()).resolves.toBe(0);
    await page.getByRole("button", { name: "Remove shop.example.com" }).click();
    await page.getByText("No custom domains yet.").waitFor({ timeout: 20_000 });
    expect((await api.get(`/api/pods/${POD}/domains`)).body.domains).toEqual([]);
    expect(consoleErrors).toEqual([]);
  }, 120_000);

  it("enables feedback, reveals the share link, and triages a visitor's pinned comment in the inbox", async () => {
    await page.goto(app(`/pods/${POD}/feedback`));
    await page.getByText("No comments yet.").waitFor();
    await page.getByRole("button", { name: "Enable feedback" }).click();
    await page.getByRole("button", { name: "Disable feedback" }).waitFor({ timeout: 20_000 });
    await expect(page.locator(".feedback-settings p").first().textContent()).resolves.toContain(
      "Collecting feedback: on",
    );

    // the share link is not in the page until revealed; then it is the API's
    const settings = (await api.get(`/api/pods/${POD}/feedback?limit=1`)).body;
    expect(await page.content()).not.toContain(settings.token);
    await expect(page.locator("[data-reveal-copy]").isVisible()).resolves.toBe(false);
    await page.getByRole("button", { name: "Reveal" }).click();
    await expect.poll(() => page.locator("#fb-share-url").inputValue()).toBe(settings.share_url);
    await expect(page.locator("[data-reveal-copy]").isVisible()).resolves.toBe(true);

    // a visitor pins a comment on the pod's page through the widget the ingress injected
    const visitorContext = await browser.newContext();
    contexts.push(visitorContext);
    const visitor = await visitorContext.newPage();
    expect((await visitor.goto(site("/")))?.status()).toBe(200);
    const widget = visitor.locator("[data-pod-feedback-widget]");
    await widget.locator("button.open").waitFor({ state: "visible", timeout: 20_000 });
    await widget.locator("button.open").click();
    await widget.locator("button", { hasText: "Pin a comment" }).click();
    await visitor.locator("h1").click();
    const form = widget.locator("form");
    await form.waitFor({ state: "visible" });
    await form.locator("textarea[name=comment]").fill(HOSTILE);
    await form.locator("input[name=name]").fill("Grace");
    await form.locator("button[type=submit]").click();
    await widget.locator(".status", { hasText: "Thank you" }).waitFor({ timeout: 15_000 });

    // the owner's inbox: the comment as text, nothing of it ran or became an element
    await page.goto(app(`/pods/${POD}/feedback`));
    const comment = page.locator("li.comment");
    await comment.first().waitFor();
    await expect(comment.count()).resolves.toBe(1);
    await expect(comment.locator(".comment-text").textContent()).resolves.toBe(HOSTILE);
    await expect(comment.locator(".comment-text img").count()).resolves.toBe(0);
    await expect(page.evaluate("typeof window.__pwned")).resolves.toBe("undefined");
    await expect(comment.locator("strong").textContent()).resolves.toBe("Grace");
    await expect(comment.locator(".facts").textContent()).resolves.toContain("h1");
    await page.getByRole("link", { name: "New (1)" }).waitFor();

    await comment.getByRole("button", { name: "Mark resolved" }).click();
    await page.getByRole("link", { name: "Resolved (1)" }).waitFor({ timeout: 15_000 });
    await expect(page.locator("li.comment .badge").textContent()).resolves.toBe("resolved");
    const triaged = (await api.get(`/api/pods/${POD}/feedback`)).body;
    expect(triaged.counts).toEqual({ new: 0, read: 0, resolved: 1 });

    await page.getByRole("link", { name: "New (0)" }).click();
    await page.getByText("No new comments.").waitFor();
    await page.getByRole("link", { name: "All (1)" }).click();
    await page.locator("li.comment").getByRole("button", { name: "Delete" }).click();
    await page.getByText("No comments yet.").waitFor({ timeout: 15_000 });
    expect((await api.get(`/api/pods/${POD}/feedback`)).body.total).toBe(0);
    expect(consoleErrors).toEqual([]);
  }, 180_000);
  it("with rows in every tab: axe-core finds nothing serious, and 390 px needs no sideways scrolling", async () => {
    // rows for each tab, made through the API: a pending domain, a comment, the pod's events
    const domain = await api.post(`/api/pods/${POD}/domains`, { domain: "a-rather-long-name.example.org" });
    expect(domain.status, JSON.stringify(domain.body)).toBe(201);
    const enabled = await api.post(`/api/pods/${POD}/feedback/settings`, { enabled: true });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    const { token } = enabled.body;
    const sent = await fetch(`${stack.api}/api/feedback/${token}`, {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": "10.77.0.1" },
      body: JSON.stringify({
        comment: `A long comment without spaces ${"x".repeat(300)}`,
        email: "visitor@example.org",
        page_path: `/${"deep/".repeat(40)}`,
        pin_selector: "main > section:nth-of-type(2) > div.card > button.primary",
      }),
    });
    expect(sent.status).toBe(201);

    const tabs = ["domains", "feedback", "agents", "events"].map((t) => `/app/pods/${POD}/${t}`);
    const findings: string[] = [];
    for (const width of [390, 1440]) {
      // axe is injected as a script of the test's own: that context bypasses the page's CSP for it
      const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      contexts.push(context);
      await context.addCookies([{ name: "pod_session", value: sessionToken, url: stack.api }]);
      for (const url of tabs) {
        const tab = await context.newPage();
        expect((await tab.goto(app(url.slice(4))))?.status(), url).toBe(200);
        if (await tab.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")) {
          findings.push(`${url} scrolls sideways at ${width} px`);
        }
        await tab.addScriptTag({ content: axeSource });
        const violations = (await tab.evaluate(
          "axe.run(document).then((r) => r.violations)",
        )) as AxeViolation[];
        for (const v of violations) {
          if (v.impact === "serious" || v.impact === "critical") {
            findings.push(
              `${url} at ${width} px: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
            );
          }
        }
        await tab.close();
      }
    }
    expect(findings).toEqual([]);
  }, 180_000);
});
