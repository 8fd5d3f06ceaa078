import { describe, expect, it } from "vitest";
import { signUp } from "../support/api";
import { recordComplaints, signedInContext } from "../support/dashboard";
import { app, type Journey } from "./journey";

/**
 * The team page and the invitation page: the owner invites a teammate by e-mail, the teammate
 * (another account, in a browser context of their own) opens the invitation's link and clicks
 * Accept, and the owner's team page lists them as a member.
 */
export function teamSteps(j: Journey) {
  describe("team", () => {
    it("invites a teammate, who accepts on the invitation page in a browser of their own", async () => {
      const { page } = j;
      const mark = j.complaints.length;
      const mate = await signUp(j.stack.api, "Tess Teammate");
      const email: string = mate.user.email;

      expect((await page.goto(app(j, "/team")))?.status()).toBe(200);
      const teamName = (await page.locator("main h1").first().textContent()) ?? "";
      expect(teamName).not.toBe("");
      await page.getByLabel("E-mail").fill(email);
      await page.getByRole("button", { name: "Send the invitation" }).click();
      const invited = page.locator("tr", { hasText: email });
      await invited.waitFor({ timeout: 15_000 });
      await expect(invited.textContent()).resolves.toContain("member");
      const link = (await invited.getByRole("button", { name: "Copy link" }).getAttribute("data-copy")) ?? "";
      expect(link.startsWith(`${j.stack.api}/app/invitations/`), link).toBe(true);

      // the teammate's own browser, signed in as them: the page says who invites to what; Accept joins
      const mateContext = await signedInContext(j.browser, j.stack.api, mate.token);
      try {
        const matePage = await mateContext.newPage();
        const mateComplaints = recordComplaints(matePage, []);
        expect((await matePage.goto(link))?.status()).toBe(200);
        await matePage.getByRole("heading", { name: `Join ${teamName}` }).waitFor();
        await expect(matePage.locator("main").textContent()).resolves.toContain(`Sent to ${email}`);
        await matePage.getByRole("button", { name: `Accept and join ${teamName}` }).click();
        await matePage.waitForURL(app(j, ""), { timeout: 15_000 });
        expect(mateComplaints).toEqual([]);
        // the link is spent: opening it again is the not-valid page
        expect((await matePage.goto(link))?.status()).toBe(404);
      } finally {
        await mateContext.close();
      }

      // the owner's team page: the teammate is a member, no invitation is pending
      await page.reload();
      const member = page.locator("tbody tr", { hasText: email });
      await member.waitFor();
      await expect(member.locator("td").nth(1).textContent()).resolves.toBe("member");
      await page.getByText("No pending invitations.").waitFor();
      const teams = (await mate.api.get("/api/teams")).body;
      expect(JSON.stringify(teams)).toContain(teamName);
      expect(j.complaints.slice(mark)).toEqual([]);
    }, 120_000);
  });
}

/** The account page's API tokens: a new token's value is shown once, then only its prefix. */
export function tokenSteps(j: Journey) {
  describe("api tokens", () => {
    it("creates an API token, shows its value once with Copy, and it works as a Bearer token", async () => {
      const { page } = j;
      const mark = j.complaints.length;
      const name = `CI deploys ${j.suffix}`;
      expect((await page.goto(app(j, "/account")))?.status()).toBe(200);
      const form = page.locator('form[data-api="/api/api-tokens"]');
      await form.getByLabel("Name").fill(name);
      await form.getByRole("button", { name: "Create token" }).click();
      const shown = page.locator("#new-token");
      await expect.poll(() => shown.textContent(), { timeout: 15_000 }).toMatch(/^ipk_\S+$/);
      const value = ((await shown.textContent()) ?? "").trim();
      await expect(form.locator("[data-result-box]").isVisible()).resolves.toBe(true);
      await form.getByRole("button", { name: "Copy" }).waitFor();

      // the value is the token: it lists the team's pods
      const pods = await fetch(`${j.stack.api}/api/pods`, { headers: { authorization: `Bearer ${value}` } });
      expect(pods.status).toBe(200);

      // shown once: the reloaded page lists the token by name and prefix, never its value
      await page.reload();
      const row = page.locator("tbody tr", { hasText: name });
      await row.waitFor();
      const prefix = ((await row.locator("code").textContent()) ?? "").replace(/…$/, "");
      expect(prefix.length).toBeGreaterThan(3);
      expect(value.startsWith(prefix)).toBe(true);
      expect(await page.content()).not.toContain(value);
      const listed = await j.owner.api.get("/api/api-tokens");
      expect(JSON.stringify(listed.body)).not.toContain(value);
      expect(j.complaints.slice(mark)).toEqual([]);
    }, 60_000);
  });
}
