import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertPod } from "./support/agent";
import { call } from "./support/client";
import { DASHBOARD_ORIGIN, page, signedIn } from "./support/dashboard";

/** Every `<script>` of a page is a file of this origin: the CSP allows no other. */
const scriptTags = (html: string) => html.match(/<script\b[^>]*>/g) ?? [];

describe("the dashboard's shell", () => {
  it("sends / to /app, and a signed-out browser to sign-in with where it was going", async () => {
    const root = await page("/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/app");
    const list = await page("/app?offset=50");
    expect(list.status).toBe(302);
    expect(list.headers.get("location")).toBe("/app/sign-in?next=%2Fapp%3Foffset%3D50");
  });

  it("renders sign-in, register and the mailed links' pages signed out", async () => {
    for (const path of [
      "/app/sign-in",
      "/app/register",
      "/app/forgot-password",
      "/app/reset-password?token=abc",
      "/app/verify-email?token=abc",
    ]) {
      const res = await page(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toMatch(/^text\/html/);
      expect(res.text, path).toMatch(/^<!doctype html>/);
    }
    const signIn = await page("/app/sign-in");
    expect(signIn.text).toContain('data-api="/api/auth/login"');
    expect((await page("/app/reset-password?token=tok_1")).text).toContain('value="tok_1"');
  });

  it("shows the team's pods with their status, and the rows fragment alone for the live refresh", async () => {
    const user = await signedIn();
    const pod = await insertPod({ hostId: null, teamId: user.user.active_team_id, status: "creating" });
    const res = await page("/app", { session: user.session });
    expect(res.status).toBe(200);
    expect(res.text).toContain(pod.name);
    expect(res.text).toContain(user.user.email);
    expect(res.text).toContain('class="badge status-creating"');
    expect(res.text).toContain('hx-trigger="every 1500ms"');
    expect(res.text).toContain("curl &#39;http://localhost:8787/api/pods?limit=50&amp;offset=0&#39;");

    await env.DB.prepare("UPDATE pods SET status = 'running' WHERE id = ?").bind(pod.id).run();
    const rows = await page("/app/pods/rows?offset=0&limit=50", { session: user.session });
    expect(rows.text).toMatch(/^<tbody id="pod-rows"/);
    expect(rows.text).toContain('class="badge status-running"');
  });

  it("pages a team with hundreds of pods", async () => {
    const user = await signedIn();
    for (let i = 0; i < 55; i++) await insertPod({ hostId: null, teamId: user.user.active_team_id });
    const first = await page("/app", { session: user.session });
    expect(first.text).toContain("1–50 of 55");
    expect(first.text).toContain('href="/app?offset=50"');
    const second = await page("/app?offset=50", { session: user.session });
    expect(second.text).toContain("51–55 of 55");
  });

  it("serves the scripts and styles from this origin, cached by content hash", async () => {
    const signIn = await page("/app/sign-in");
    const urls = [...signIn.text.matchAll(/(?:src|href)="(\/app\/assets\/[^"]+)"/g)].map((m) => m[1] ?? "");
    expect(urls.length).toBeGreaterThanOrEqual(3);
    for (const url of urls) {
      const res = await page(url.replaceAll("&amp;", "&"));
      expect(res.status, url).toBe(200);
      expect(res.headers.get("cache-control"), url).toBe("public, max-age=31536000, immutable");
      expect(res.headers.get("content-type"), url).toMatch(/^text\/(javascript|css)/);
    }
    expect((await page("/app/assets/nope.js")).status).toBe(404);
  });
});

describe("the dashboard against an attacker", () => {
  it("allows no inline script, no framing and no third-party origin on any page", async () => {
    const user = await signedIn();
    for (const [path, session] of [
      ["/app/sign-in", undefined],
      ["/app", user.session],
    ] as const) {
      const res = await page(path, { session });
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).not.toContain("unsafe-inline");
      expect(csp, path).not.toContain("unsafe-eval");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("form-action 'self'");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      expect(res.headers.get("cache-control"), path).toBe("no-store");
      for (const tag of scriptTags(res.text)) expect(tag, path).toMatch(/ src="\/app\/assets\//);
    }
  });

  it("escapes a team name that is markup", async () => {
    const user = await signedIn();
    const evil = "<img src=x onerror=alert(1)>";
    const team = await call("POST", "/api/teams", { name: evil }, { token: user.token });
    expect(team.status).toBe(201);
    const res = await page("/app", { session: user.session });
    expect(res.text).not.toContain(evil);
    expect(res.text).toContain("&lt;img src=x onerror=alert(1)&gt;");
  });

  it("is not served on a pod's host name, nor on any host but the API's", async () => {
    const user = await signedIn();
    for (const host of [`victim.${env.POD_DOMAIN}`, "evil.example"]) {
      const res = await page("/app", { host, session: user.session });
      expect(res.status, host).toBe(404);
      expect(res.text, host).not.toContain(user.user.email);
    }
  });

  it("never sends sign-in to another site (no open redirect)", async () => {
    for (const next of ["//evil.example/x", "https://evil.example/", "/app\\@evil.example", "/apple"]) {
      const res = await page(`/app/sign-in?next=${encodeURIComponent(next)}`);
      expect(res.text, next).toContain('data-then="go:/app"');
    }
    const kept = await page(`/app/sign-in?next=${encodeURIComponent("/app/pods/x")}`);
    expect(kept.text).toContain('data-then="go:/app/pods/x"');
  });

  it("answers a bearer token with the sign-in redirect: pages are the browser's, by cookie", async () => {
    const user = await signedIn();
    const res = await page("/app", { headers: { authorization: `Bearer ${user.token}` } });
    expect(res.status).toBe(302);
  });

  it("answers an unknown page with its own 404 page, not the API's JSON", async () => {
    const res = await page("/app/no-such-page");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.text).toContain("There is no such page.");
  });

  it("keeps the rows fragment behind sign-in too", async () => {
    const res = await page("/app/pods/rows");
    expect(res.status).toBe(302);
    expect(DASHBOARD_ORIGIN).toBe(env.PUBLIC_URL);
  });
});
