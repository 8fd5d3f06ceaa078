import { describe, expect, it } from "vitest";
import { auditPages } from "../support/dashboard";
import { app, type Journey, staticPod } from "./journey";

const HOSTILE = '<img src=x onerror="window.__pwned = 1">Button broken';

/** The static pod's Domains tab: the TXT record to publish shown exactly, verified against the DNS double. */
export function domainsSteps(j: Journey) {
  describe("domains", () => {
    it("adds a domain, shows the TXT record to create exactly as the API has it, verifies and removes it", async () => {
      const { page } = j;
      const mark = j.complaints.length;
      expect((await page.goto(app(j, `/pods/${staticPod(j)}/domains`)))?.status()).toBe(200);
      await page.getByText("No custom domains yet.").waitFor();
      await page.getByLabel("Domain").fill("Shop.Example.COM");
      await page.getByRole("button", { name: "Add domain" }).click();
      await page.getByRole("heading", { name: "shop.example.com" }).waitFor({ timeout: 15_000 });

      const listed = await j.owner.api.get(`/api/pods/${staticPod(j)}/domains`);
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
      j.dns.setTxt(domain.verification.name, [domain.verification.value]);
      await page.getByRole("button", { name: "Verify shop.example.com" }).click();
      await page.locator(".domain .badge", { hasText: "verified" }).waitFor({ timeout: 20_000 });
      await expect(page.locator(".txt-record").count()).resolves.toBe(0);
      await page.getByRole("button", { name: "Remove shop.example.com" }).click();
      await page.getByText("No custom domains yet.").waitFor({ timeout: 20_000 });
      expect((await j.owner.api.get(`/api/pods/${staticPod(j)}/domains`)).body.domains).toEqual([]);
      expect(j.complaints.slice(mark)).toEqual([]);
    }, 120_000);
  });
}

/**
 * The static pod's Feedback tab: enabled in the dashboard, a visitor pins a comment on the pod's page
 * through the widget the ingress injects, and the owner triages it in the inbox. A visitor's markup
 * stays text all the way.
 */
export function feedbackSteps(j: Journey) {
  describe("feedback", () => {
    it("enables feedback, reveals the share link, and triages a visitor's pinned comment in the inbox", async () => {
      const { page } = j;
      const mark = j.complaints.length;
      await page.goto(app(j, `/pods/${staticPod(j)}/feedback`));
      await page.getByText("No comments yet.").waitFor();
      await page.getByRole("button", { name: "Enable feedback" }).click();
      await page.getByRole("button", { name: "Disable feedback" }).waitFor({ timeout: 20_000 });
      await expect(page.locator(".feedback-settings p").first().textContent()).resolves.toContain(
        "Collecting feedback: on",
      );

      // the share link is not in the page until revealed; then it is the API's
      const settings = (await j.owner.api.get(`/api/pods/${staticPod(j)}/feedback?limit=1`)).body;
      expect(await page.content()).not.toContain(settings.token);
      await expect(page.locator("[data-reveal-copy]").isVisible()).resolves.toBe(false);
      await page.getByRole("button", { name: "Reveal" }).click();
      await expect.poll(() => page.locator("#fb-share-url").inputValue()).toBe(settings.share_url);
      await expect(page.locator("[data-reveal-copy]").isVisible()).resolves.toBe(true);

      // a visitor pins a comment on the pod's page through the widget the ingress injected
      const visitorContext = await j.browser.newContext();
      const visitor = await visitorContext.newPage();
      expect(
        (await visitor.goto(`http://${staticPod(j)}.pods.localhost:${j.stack.edgePort}/`))?.status(),
      ).toBe(200);
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
      await visitorContext.close();

      // the owner's inbox: the comment as text, nothing of it ran or became an element
      await page.goto(app(j, `/pods/${staticPod(j)}/feedback`));
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
      const triaged = (await j.owner.api.get(`/api/pods/${staticPod(j)}/feedback`)).body;
      expect(triaged.counts).toEqual({ new: 0, read: 0, resolved: 1 });

      await page.getByRole("link", { name: "New (0)" }).click();
      await page.getByText("No new comments.").waitFor();
      await page.getByRole("link", { name: "All (1)" }).click();
      await page.locator("li.comment").getByRole("button", { name: "Delete" }).click();
      await page.getByText("No comments yet.").waitFor({ timeout: 15_000 });
      expect((await j.owner.api.get(`/api/pods/${staticPod(j)}/feedback`)).body.total).toBe(0);
      expect(j.complaints.slice(mark)).toEqual([]);
    }, 180_000);

    it("with rows in every tab: axe-core finds nothing serious, and 390 px needs no sideways scrolling", async () => {
      // rows for each tab, made through the API: a pending domain, a comment, the pod's events
      const domain = await j.owner.api.post(`/api/pods/${staticPod(j)}/domains`, {
        domain: "a-rather-long-name.example.org",
      });
      expect(domain.status, JSON.stringify(domain.body)).toBe(201);
      const enabled = await j.owner.api.post(`/api/pods/${staticPod(j)}/feedback/settings`, {
        enabled: true,
      });
      expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
      const { token } = enabled.body;
      const sent = await fetch(`${j.stack.api}/api/feedback/${token}`, {
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

      const tabs = ["domains", "feedback", "agents", "events"].map((t) => `/app/pods/${staticPod(j)}/${t}`);
      expect(await auditPages(j.browser, j.stack.api, j.owner.token, tabs)).toEqual([]);
    }, 180_000);
  });
}
