import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, freshIp, login, PASSWORD, registerUser, sessionCookie } from "./support/client";
import { connectorSession, expireSessionsOf, first, sha256Hex } from "./support/db";
import { documentedOperations } from "./support/openapi";

describe("credentials", () => {
  it("accepts the session token as a Bearer header and as the pod_session cookie alike", async () => {
    const u = await registerUser();
    const viaBearer = await call("GET", "/api/auth/user", undefined, { token: u.token });
    const viaCookie = await call("GET", "/api/auth/user", undefined, { cookie: `pod_session=${u.token}` });
    expect(viaBearer.status).toBe(200);
    expect(viaCookie.status).toBe(200);
    expect(viaCookie.body).toEqual(viaBearer.body);
  });

  it("accepts the cookie set by login for every authenticated call", async () => {
    const u = await registerUser();
    const res = await call("POST", "/api/auth/login", { email: u.user.email, password: PASSWORD });
    const cookie = sessionCookie(res);
    const teams = await call("GET", "/api/teams", undefined, { cookie });
    expect(teams.status).toBe(200);
    const created = await call("POST", "/api/teams", { name: "Cookie team" }, { cookie });
    expect(created.status).toBe(201);
  });

  it("accepts the bearer scheme in any case", async () => {
    const u = await registerUser();
    const res = await call("GET", "/api/auth/user", undefined, {
      headers: { authorization: `bearer ${u.token}` },
    });
    expect(res.status).toBe(200);
  });

  it.each([
    ["no credentials", {}],
    ["a garbage bearer token", { token: "garbage" }],
    ["a garbage ipk_ token", { token: "ipk_garbage" }],
    ["a garbage cookie", { cookie: "pod_session=garbage" }],
    ["a badly encoded cookie", { cookie: "pod_session=%E0%A4%A" }],
    ["an empty bearer", { headers: { authorization: "Bearer " } }],
    ["another scheme", { headers: { authorization: "Basic dXNlcjpwYXNz" } }],
  ])("answers 401 {error} for %s", async (_, opts) => {
    const res = await call("GET", "/api/auth/user", undefined, opts);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String) });
  });

  it("answers 401 for an expired session", async () => {
    const u = await registerUser();
    await expireSessionsOf(u.user.id);
    expect((await call("GET", "/api/auth/user", undefined, { token: u.token })).status).toBe(401);
  });

  it("stores sessions hashed, never the token itself", async () => {
    const u = await registerUser();
    const row = await first<{ token_hash: string }>(
      "SELECT token_hash FROM sessions WHERE user_id = ?",
      u.user.id,
    );
    expect(row?.token_hash).toBe(await sha256Hex(u.token));
    const leaked = await first("SELECT id FROM sessions WHERE token_hash = ?", u.token);
    expect(leaked).toBeNull();
  });

  it("gives each login its own session", async () => {
    const u = await registerUser();
    const a = await login(u.user.email);
    const b = await login(u.user.email);
    expect(new Set([u.token, a, b]).size).toBe(3);
  });

  it("accepts a connector session like a login session", async () => {
    const u = await registerUser();
    const token = await connectorSession(u);
    const res = await call("GET", "/api/auth/user", undefined, { token });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(u.user.id);
  });
});

describe("cross-site requests (a page on a sibling pod host posting with the victim's cookie)", () => {
  /** wrangler.toml's PUBLIC_URL */
  const OWN = "http://localhost:8787";
  const EVIL = "http://evil.pods.localhost";

  /** A multipart upload of index.php into `pod`, as an HTML form of another page would send it. */
  async function uploadForm(pod: string, headers: Record<string, string>) {
    const form = new FormData();
    form.append("path", "/home/pod_user/app/index.php");
    form.append("file", new File(["<?php system($_GET['c']);"], "index.php"));
    const res = await exports.default.fetch(`http://localhost/api/pods/${pod}/files/upload`, {
      method: "POST",
      headers: { "cf-connecting-ip": freshIp(), ...headers },
      body: form,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  it("refuses a cookie upload from another origin with 403 naming the reason; the API's own origin and a bearer token pass", async () => {
    const u = await registerUser();
    const cookie = `pod_session=${u.token}`;
    const refused = await uploadForm("victim", { cookie, origin: EVIL });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: expect.stringContaining("cross-site request refused") });
    expect(refused.body.error).toContain(EVIL);

    // past auth, the route answers: there is no pod of that name
    const own = await uploadForm("victim", { cookie, origin: OWN });
    expect(own).toMatchObject({ status: 404, body: { error: expect.stringMatching(/pod/i) } });
    const bearer = await uploadForm("victim", { authorization: `Bearer ${u.token}`, origin: EVIL });
    expect(bearer).toMatchObject({ status: 404, body: { error: expect.stringMatching(/pod/i) } });
  });

  it("refuses a cookie JSON POST from another origin, or one the browser calls same-site, and lets the rest through", async () => {
    const u = await registerUser();
    const cookie = `pod_session=${u.token}`;
    const post = (headers: Record<string, string>) =>
      call("POST", "/api/teams", { name: "Made by whom?" }, { headers: { cookie, ...headers } });

    const forged: Record<string, string>[] = [
      { origin: EVIL },
      { origin: "null" }, // a sandboxed frame, a redirect across origins
      { origin: "http://localhost:8788" }, // another port is another origin
      { "sec-fetch-site": "same-site" }, // no Origin: the browser's own word
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of forged) {
      const res = await post(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body.error, JSON.stringify(headers)).toMatch(/^cross-site request refused/);
    }
    expect((await post({ origin: OWN })).status).toBe(201);
    expect((await post({ "sec-fetch-site": "same-origin" })).status).toBe(201);
    expect((await post({})).status).toBe(201); // curl, a script: no browser, nothing forged
    const bearer = await call(
      "POST",
      "/api/teams",
      { name: "By token" },
      { token: u.token, headers: { origin: EVIL, "sec-fetch-site": "cross-site" } },
    );
    expect(bearer.status).toBe(201);
    // reads change nothing and are not readable cross-origin: left alone
    expect((await call("GET", "/api/teams", undefined, { cookie, headers: { origin: EVIL } })).status).toBe(
      200,
    );
  });

  it("leaves API tokens alone, from any origin", async () => {
    const u = await registerUser();
    const made = await call("POST", "/api/api-tokens", { name: "ci" }, { token: u.token });
    expect(made.status).toBe(201);
    const res = await call(
      "PUT",
      `/api/teams/${u.user.active_team_id}`,
      { name: "By API token" },
      { token: made.body.token, headers: { origin: EVIL } },
    );
    expect(res.status).toBe(200);
  });
});

describe("every authenticated operation", () => {
  it("answers 401 {error} without credentials and with a garbage token", { timeout: 60_000 }, async () => {
    const operations = (await documentedOperations()).filter((op) => op.secured);
    expect(operations.length).toBeGreaterThan(10);
    for (const op of operations) {
      for (const opts of [{}, { token: "garbage" }]) {
        const res = await call(op.method, op.concrete, op.method === "GET" ? undefined : {}, opts);
        expect(res.status, `${op.method} ${op.path}`).toBe(401);
        expect(res.body, `${op.method} ${op.path}`).toEqual({ error: expect.any(String) });
      }
    }
    // Two calls per operation, well over a hundred operations: seconds on a busy shared machine.
  });

  it("the public operations are the ones the spec lists as public", async () => {
    const open = (await documentedOperations()).filter((op) => !op.secured && op.path.startsWith("/api/"));
    const publicPaths = new Set([
      "POST /api/auth/register",
      "POST /api/auth/login",
      "POST /api/auth/forgot-password",
      "POST /api/auth/reset-password",
      "POST /api/auth/verify-email",
      "GET /api/invitations/{token}",
      "POST /api/invitations/accept",
      "POST /api/webhooks/repohost",
      "POST /api/webhooks/git/{podName}",
      // the payment processor's webhook: no session, its signature is the authentication (docs/billing.md)
      "POST /api/webhooks/stripe",
      "POST /api/feedback/{token}",
      "GET /api/feedback/{token}/mine",
      "POST /api/affiliate/visit",
      "GET /api/imports/sources",
    ]);
    for (const op of open)
      expect(publicPaths, `${op.method} ${op.path}`).toContain(`${op.method} ${op.path}`);
  });
});
