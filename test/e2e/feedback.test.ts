import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, apiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { type Stack, startStack } from "./support/stack";

/**
 * The feedback widget as a visitor meets it (docs/feedback.md), in Debian's Chromium: the pod's
 * page through the host's ingress (its vhost injecting the script), the script and the public API
 * from the Worker's origin (CORS), the owner's API beside it. A comment holding markup shows as
 * text; `link` visibility shows the widget only through share_url (and that visitor's later
 * pages); a rotation ends the old link.
 */

const POD = "fb-site";
const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">hello';

describe("the feedback widget in a real browser", () => {
  let stack: Stack;
  let api: ApiClient;
  let ownerToken: string;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  /** the pod's address through the test's ingress (the pod domain is pods.localhost, loopback) */
  const podUrl = (path = "/") => `http://${POD}.pods.localhost:${stack.edgePort}${path}`;
  /** share_url as a browser reaches it here: http and the ingress's port */
  const reachable = (shareUrl: string) => {
    const url = new URL(shareUrl);
    url.protocol = "http:";
    url.port = String(stack.edgePort);
    return url.toString();
  };

  async function visitor(): Promise<Page> {
    const context = await browser.newContext();
    contexts.push(context);
    return context.newPage();
  }

  /** The page loaded; whether the vhost put the widget's script in it. */
  async function open(page: Page, url: string): Promise<boolean> {
    const res = await page.goto(url);
    expect(res?.status()).toBe(200);
    return (await page.content()).includes("/feedback/widget.js");
  }

  const widgetButton = (page: Page) => page.locator("[data-pod-feedback-widget] button.open");

  beforeAll(async () => {
    [stack, browser] = await Promise.all([startStack("fb", { publicUrl: true }), launchChromium()]);
    ({ api, token: ownerToken } = await signUp(stack.api));
    await waitForHostOnline(api);
    await createRunningPods(api, [[POD, "static"]]);
  }, 300_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await stack?.stop();
  }, 120_000);

  it("everyone: a visitor pins a comment, the owner sees it; markup in it shows as text", async () => {
    const enabled = await api.post(`/api/pods/${POD}/feedback/settings`, { enabled: true });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, visibility: "everyone" });

    const page = await visitor();
    const failed: string[] = [];
    page.on("requestfailed", (req) => failed.push(`${req.url()} ${req.failure()?.errorText}`));
    expect(await open(page, podUrl("/"))).toBe(true);
    await widgetButton(page).waitFor({ state: "visible", timeout: 20_000 });

    await widgetButton(page).click();
    await page.locator("[data-pod-feedback-widget] button", { hasText: "Pin a comment" }).click();
    await page.locator("h1").click();
    const form = page.locator("[data-pod-feedback-widget] form");
    await form.waitFor({ state: "visible" });
    await expect(form.locator(".target").textContent()).resolves.toBe("On: podhost");
    await form.locator("textarea[name=comment]").fill(HOSTILE);
    await form.locator("input[name=name]").fill("Visitor <b>Bold</b>");
    await form.locator("button[type=submit]").click();
    await page
      .locator("[data-pod-feedback-widget] .status", { hasText: "Thank you" })
      .waitFor({ timeout: 15_000 });

    // shown as text: the markup is there as characters, nothing of it ran or became elements
    const item = page.locator("[data-pod-feedback-widget] ul.mine li").first();
    await expect(item.textContent()).resolves.toContain("<script>window.__pwned = 1</script>");
    await expect(page.locator("[data-pod-feedback-widget] ul.mine li img").count()).resolves.toBe(0);
    await expect(page.evaluate("typeof window.__pwned")).resolves.toBe("undefined");
    expect(failed).toEqual([]);

    const owner = await api.get(`/api/pods/${POD}/feedback`);
    expect(owner.status).toBe(200);
    expect(owner.body.counts).toEqual({ new: 1, read: 0, resolved: 0 });
    const [stored] = owner.body.feedback;
    expect(stored).toMatchObject({
      pod_name: POD,
      comment: HOSTILE,
      name: "Visitor <b>Bold</b>",
      page_path: "/",
      element_text: "podhost",
      status: "new",
    });
    expect(stored.pin_selector).toContain("h1");
    expect(stored.viewport_w).toBeGreaterThan(0);
    expect(typeof stored.pin_x).toBe("number");

    // the visitor's next visit lists their comment (`/mine`) and pins it on the page
    await page.reload();
    await page.locator("[data-pod-feedback-widget] button.open", { hasText: "Feedback (1)" }).waitFor();
    await expect(page.locator("[data-pod-feedback-widget] .pin").count()).resolves.toBe(1);
    // the owner triages it
    const triaged = await fetch(`${stack.api}/api/pods/${POD}/feedback/${stored.id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${ownerToken}`, "content-type": "application/json" },
      body: JSON.stringify({ status: "read" }),
    });
    expect(await triaged.json()).toEqual({ ok: true });
  }, 120_000);

  it("link: the widget only through share_url, then on that visitor's later pages; rotation ends the old link", async () => {
    const linked = await api.post(`/api/pods/${POD}/feedback/settings`, { visibility: "link" });
    expect(linked.status, JSON.stringify(linked.body)).toBe(200);
    const share = reachable(linked.body.share_url);

    const stranger = await visitor();
    expect(await open(stranger, podUrl("/"))).toBe(false);

    const invited = await visitor();
    expect(await open(invited, share)).toBe(true);
    await widgetButton(invited).waitFor({ state: "visible", timeout: 20_000 });
    expect(await open(invited, podUrl("/"))).toBe(true);

    const rotated = await api.post(`/api/pods/${POD}/feedback/settings`, { rotate: true });
    expect(rotated.status).toBe(200);
    expect(rotated.body.token).not.toBe(linked.body.token);
    expect(await open(invited, podUrl("/"))).toBe(false);
    expect(await open(invited, share)).toBe(false);
    const comment = { comment: "late", name: "Old link" };
    expect((await apiClient(stack.api).post(`/api/feedback/${linked.body.token}`, comment)).status).toBe(404);

    const fresh = await visitor();
    expect(await open(fresh, reachable(rotated.body.share_url))).toBe(true);
    await widgetButton(fresh).waitFor({ state: "visible", timeout: 20_000 });
  }, 120_000);

  it("a stopped pod's settings cannot change: 500, and they stay as they were", async () => {
    expect((await api.post(`/api/pods/${POD}/stop`)).body.status).toBe("stopped");
    const before = (await api.get(`/api/pods/${POD}/feedback`)).body;
    const refused = await api.post(`/api/pods/${POD}/feedback/settings`, { enabled: false });
    expect(refused.status).toBe(500);
    expect(refused.body.error).toContain("not running");
    const after = (await api.get(`/api/pods/${POD}/feedback`)).body;
    expect(after).toMatchObject({ enabled: true, visibility: "link", token: before.token });
  }, 120_000);
});
