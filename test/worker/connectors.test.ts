import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { call, freshIp, PASSWORD, registerUser } from "./support/client";
import {
  authorizeQuery,
  BASE,
  connect,
  cookiesOf,
  exchangeCode,
  handleOf,
  openConsent,
  pkce,
  postConsent,
  REDIRECT_URI,
  raw,
  registerClient,
} from "./support/connectors";
import { first, insertPod } from "./support/db";
import { createTeam } from "./support/teams";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

describe("OAuth discovery", () => {
  it("publishes the authorization server's and the protected resource's metadata", async () => {
    const as = await raw("/.well-known/oauth-authorization-server");
    expect(as.status).toBe(200);
    expect(as.json).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
    });
    const prm = await raw("/.well-known/oauth-protected-resource");
    expect(prm.status).toBe(200);
    expect(prm.json).toMatchObject({ resource: BASE, authorization_servers: [BASE] });
  });
});

describe("the provider's endpoints (attacker cases)", () => {
  const registration = (body: unknown, ip = freshIp()) =>
    raw("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": ip },
      body: JSON.stringify(body),
    });
  const client = {
    client_name: "Flood",
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code"],
    response_types: ["code"],
  };

  it("dynamic registration is limited: 10 per hour per IP (429), an 8 KiB body (413), capped metadata (400)", async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i++) expect((await registration(client, ip)).status).toBe(201);
    const refused = await registration(client, ip);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(typeof refused.json.error).toBe("string");
    expect((await registration(client)).status).toBe(201); // another address registers

    const big = await registration({ ...client, client_name: "x".repeat(9 * 1024) });
    expect(big.status).toBe(413);
    expect(typeof big.json.error).toBe("string");
    const capped: [Record<string, unknown>, string][] = [
      [{ redirect_uris: Array.from({ length: 6 }, (_, i) => `${REDIRECT_URI}/${i}`) }, "redirect_uris"],
      [{ redirect_uris: [`${REDIRECT_URI}?${"a".repeat(600)}`] }, "redirect_uris"],
      [{ client_name: "n".repeat(101) }, "client_name"],
      [{ logo_uri: `https://x.example/${"l".repeat(600)}` }, "logo_uri"],
      [{ contacts: Array.from({ length: 6 }, (_, i) => `c${i}@x.example`) }, "contacts"],
      [{ "client_name#fr": "Inondation" }, "client_name#fr"],
    ];
    for (const [extra, field] of capped) {
      const res = await registration({ ...client, ...extra });
      expect(res.status, field).toBe(400);
      expect(res.json).toMatchObject({ error: "invalid_client_metadata" });
      expect(res.json.error_description).toContain(field);
    }
  });

  it("asked on a host other than PUBLIC_URL's, they answer {error} (not an empty 404)", async () => {
    for (const [method, path] of [
      ["GET", "/.well-known/oauth-authorization-server"],
      ["POST", "/oauth/token"],
      ["POST", "/oauth/register"],
    ]) {
      const res = await exports.default.fetch(`http://127.0.0.1:8787${path}`, {
        method,
        headers: { "cf-connecting-ip": freshIp(), "content-type": "application/json" },
        ...(method === "POST" ? { body: JSON.stringify(client) } : {}),
      });
      expect(res.status, path).toBe(404);
      const body = (await res.json()) as { error: string };
      expect(body.error).toContain(BASE);
    }
  });
});

describe("connector sessions through OAuth", () => {
  it("registers, authorizes with PKCE, consents and gets a 30-day token that acts as the user", async () => {
    const u = await registerUser();
    const c = await connect(u);
    expect(c.expiresIn).toBe(30 * 86_400);
    const me = await call("GET", "/api/auth/user", undefined, { token: c.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(u.user.id);
  });

  it("cannot create an API token nor list the account's (403)", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const res = await call("POST", "/api/api-tokens", { name: "from a connector" }, { token: c.accessToken });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatch(/connector/);
    expect((await call("GET", "/api/api-tokens", undefined, { token: c.accessToken })).status).toBe(403);
  });

  it("acts on the team active at consent, even after the user switches", async () => {
    const u = await registerUser();
    const team = await createTeam(u);
    const switched = await call("POST", "/api/teams/switch", { team_id: team.id }, { token: u.token });
    expect(switched.status).toBe(200);
    const podId = await insertPod(team.id);
    const c = await connect(u);
    await call("POST", "/api/teams/switch", { team_id: u.user.active_team_id }, { token: u.token });
    const pods = await call("GET", "/api/pods", undefined, { token: c.accessToken });
    expect(pods.status).toBe(200);
    expect(pods.body.pods.map((p: { id: string }) => p.id)).toEqual([podId]);
    const listed = await call("GET", "/api/connectors", undefined, { token: u.token });
    expect(listed.body.connectors[0]).toMatchObject({ team_id: team.id, team_name: team.name });
  });

  it("refreshes: a new access token from the refresh token, the old one rotated out on use", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const refreshed = await raw("/oauth/token", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: c.refreshToken,
        client_id: c.clientId,
      }).toString(),
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.access_token).not.toBe(c.accessToken);
    const me = await call("GET", "/api/auth/user", undefined, { token: refreshed.json.access_token });
    expect(me.status).toBe(200);
  });

  it("lists the user's grants and revokes one: its token is 401 at once, its refresh token dead", async () => {
    const u = await registerUser();
    const c = await connect(u, "Claude");
    const listed = await call("GET", "/api/connectors", undefined, { token: u.token });
    expect(listed.status).toBe(200);
    expect(listed.body.connectors).toEqual([
      expect.objectContaining({
        client_id: c.clientId,
        client_name: "Claude",
        redirect_host: "127.0.0.1:33418",
        team_id: u.user.active_team_id,
      }),
    ]);
    const id = listed.body.connectors[0].id;
    expect((await call("GET", "/api/auth/user", undefined, { token: c.accessToken })).status).toBe(200);

    const revoked = await call("DELETE", `/api/connectors/${id}`, undefined, { token: u.token });
    expect(revoked).toMatchObject({ status: 200, body: { status: "revoked" } });
    expect((await call("GET", "/api/auth/user", undefined, { token: c.accessToken })).status).toBe(401);
    const refreshed = await raw("/oauth/token", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: c.refreshToken,
        client_id: c.clientId,
      }).toString(),
    });
    expect(refreshed.status).toBe(400);
    expect((await call("GET", "/api/connectors", undefined, { token: u.token })).body.connectors).toEqual([]);
  });

  it("another user cannot see or revoke a grant (404), and a missing one is 404", async () => {
    const owner = await registerUser();
    const other = await registerUser();
    const c = await connect(owner);
    const [grant] = (await call("GET", "/api/connectors", undefined, { token: owner.token })).body.connectors;
    expect((await call("GET", "/api/connectors", undefined, { token: other.token })).body.connectors).toEqual(
      [],
    );
    const res = await call("DELETE", `/api/connectors/${grant.id}`, undefined, { token: other.token });
    expect(res.status).toBe(404);
    expect(
      (await call("DELETE", "/api/connectors/cng_missing", undefined, { token: other.token })).status,
    ).toBe(404);
    expect((await call("GET", "/api/auth/user", undefined, { token: c.accessToken })).status).toBe(200);
  });

  it("a grant stops working on a team its user has left", async () => {
    const owner = await registerUser();
    const member = await registerUser();
    const team = await createTeam(owner);
    await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: member.user.email, role: "member" },
      { token: owner.token },
    );
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    const c = await connect(member);
    expect((await call("GET", "/api/pods", undefined, { token: c.accessToken })).status).toBe(200);
    const left = await call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, {
      token: owner.token,
    });
    expect(left.status).toBe(200);
    expect((await call("GET", "/api/pods", undefined, { token: c.accessToken })).status).toBe(401);
  });

  it("stays on its team: adds nobody to, invites nobody to, renames or deletes nothing of the user's other team (attacker)", async () => {
    const [u, stranger, inviter] = await Promise.all([registerUser(), registerUser(), registerUser()]);
    const teamB = await createTeam(u);
    const c = await connect(u); // granted on u's personal team, not B
    const as = { token: c.accessToken };
    const onB: [string, string, unknown?][] = [
      ["POST", `/api/teams/${teamB.id}/members`, { email: stranger.user.email, role: "owner" }],
      ["POST", `/api/teams/${teamB.id}/invitations`, { email: stranger.user.email, role: "member" }],
      ["PUT", `/api/teams/${teamB.id}`, { name: "Renamed by an assistant" }],
      ["DELETE", `/api/teams/${teamB.id}`],
      ["GET", `/api/teams/${teamB.id}`],
      ["GET", `/api/teams/${teamB.id}/members/details`],
      ["GET", `/api/teams/${teamB.id}/invitations`],
      ["DELETE", `/api/teams/${teamB.id}/members/${u.user.id}`],
    ];
    for (const [method, path, body] of onB) {
      const res = await call(method, path, body, as);
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(404);
    }
    // Switching the user's active team and joining another team are the account's: 403.
    const switched = await call("POST", "/api/teams/switch", { team_id: teamB.id }, as);
    expect(switched.status).toBe(403);
    const elsewhere = await createTeam(inviter);
    const inv = await call(
      "POST",
      `/api/teams/${elsewhere.id}/invitations`,
      { email: u.user.email, role: "member" },
      { token: inviter.token },
    );
    const accepted = await call("POST", "/api/invitations/accept", { token: inv.body.token }, as);
    expect(accepted.status).toBe(403);
    expect(accepted.body.error).toMatch(/connector session acts on its own team only/);

    // B as its owner's session sees it: the same name, the owner alone, no invitation.
    const own = { token: u.token };
    expect((await call("GET", `/api/teams/${teamB.id}`, undefined, own)).body.name).toBe(teamB.name);
    const members = await call("GET", `/api/teams/${teamB.id}/members`, undefined, own);
    expect(members.body.map((m: { user_id: string }) => m.user_id)).toEqual([u.user.id]);
    expect((await call("GET", `/api/teams/${teamB.id}/invitations`, undefined, own)).body).toEqual([]);
    const me = await call("GET", "/api/auth/user", undefined, own);
    expect(me.body.active_team_id).toBe(u.user.active_team_id);
    const joined = await call("GET", `/api/teams/${elsewhere.id}/members`, undefined, {
      token: inviter.token,
    });
    expect(joined.body.map((m: { user_id: string }) => m.user_id)).not.toContain(u.user.id);
    // Its own team stays its to work on.
    expect((await call("GET", `/api/teams/${u.user.active_team_id}`, undefined, as)).status).toBe(200);
  });

  it("an expired grant is 401 and unlisted, and the cron sweep removes its row", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const past = new Date(Date.now() - 1000).toISOString();
    await env.DB.prepare("UPDATE connector_grants SET expires_at = ? WHERE user_id = ?")
      .bind(past, u.user.id)
      .run();
    expect((await call("GET", "/api/auth/user", undefined, { token: c.accessToken })).status).toBe(401);
    expect((await call("GET", "/api/connectors", undefined, { token: u.token })).body.connectors).toEqual([]);
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "expired-connector-grants"),
    );
    expect(await first("SELECT id FROM connector_grants WHERE user_id = ?", u.user.id)).toBeNull();
  });

  it("logout with a connector token is 400 naming the way to revoke it", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const res = await call("POST", "/api/auth/logout", undefined, { token: c.accessToken });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("/api/connectors/");
    expect((await call("GET", "/api/auth/user", undefined, { token: c.accessToken })).status).toBe(200);
  });

  it("refuses a garbage token shaped like an OAuth one (401)", async () => {
    const u = await registerUser();
    const forged = `${u.user.id}:abcdefghijklmnop:${"x".repeat(32)}`;
    expect((await call("GET", "/api/auth/user", undefined, { token: forged })).status).toBe(401);
  });
});

describe("the authorization endpoint (attacker cases)", () => {
  it("shows a sign-in form when signed out; a wrong password is 401 there, a right one signs in and comes back", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const query = authorizeQuery(clientId, challenge);
    const form = await raw(`/authorize?${query}`);
    expect(form.status).toBe(200);
    expect(form.text).toContain('name="password"');
    expect(form.text).not.toContain('name="handle"');

    const post = (password: string) =>
      raw("/authorize", {
        method: "POST",
        headers: { ...FORM, origin: BASE },
        body: new URLSearchParams({
          intent: "sign_in",
          oauth_query: query,
          email: u.user.email,
          password,
        }).toString(),
      });
    const wrong = await post("not the password");
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain("invalid email or password");
    const right = await post(PASSWORD);
    expect(right.status).toBe(303);
    expect(right.headers.get("location")).toBe(`/authorize?${query}`);
    const cookie = cookiesOf(right);
    expect(cookie).toMatch(/^pod_session=/);
    const consent = await raw(`/authorize?${query}`, { headers: { cookie } });
    expect(consent.status).toBe(200);
    expect(handleOf(consent.text)).not.toBe("");
  });

  it("the sign-in form cannot send the browser elsewhere: it always comes back to /authorize here", async () => {
    const u = await registerUser();
    const res = await raw("/authorize", {
      method: "POST",
      headers: { ...FORM, origin: BASE },
      body: new URLSearchParams({
        intent: "sign_in",
        oauth_query: "x=1#@evil.example/",
        email: u.user.email,
        password: PASSWORD,
      }).toString(),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toMatch(/^\/authorize\?/);
  });

  it("refuses a consent form posted from another origin (CSRF) with 403, and grants nothing", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const { handle, cookie } = await openConsent(u, authorizeQuery(clientId, challenge));
    for (const origin of ["http://evil.pods.localhost", "null"]) {
      const forged = await postConsent(cookie, handle, "approve", origin);
      expect(forged.status).toBe(403);
      expect(forged.headers.get("location")).toBeNull();
      expect(forged.text).toContain("cross-site request refused");
    }
    const forgedBySite = await raw("/authorize", {
      method: "POST",
      headers: { ...FORM, cookie, "sec-fetch-site": "same-site" },
      body: new URLSearchParams({ intent: "consent", handle, decision: "approve" }).toString(),
    });
    expect(forgedBySite.status).toBe(403);
    expect(await first("SELECT id FROM connector_grants WHERE user_id = ?", u.user.id)).toBeNull();
    // the page itself still works afterwards
    expect((await postConsent(cookie, handle, "approve")).status).toBe(302);
  });

  it("refuses a consent post without the browser's binding cookie (a handle lifted from another browser)", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const { handle } = await openConsent(u, authorizeQuery(clientId, challenge));
    const res = await postConsent(`pod_session=${u.token}`, handle, "approve");
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await first("SELECT id FROM connector_grants WHERE user_id = ?", u.user.id)).toBeNull();
  });

  it("a handle works once", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const { handle, cookie } = await openConsent(u, authorizeQuery(clientId, challenge));
    expect((await postConsent(cookie, handle, "approve")).status).toBe(302);
    expect((await postConsent(cookie, handle, "approve")).status).toBe(400);
  });

  it("a consent post signed out is 401, not a grant", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const { handle, cookie } = await openConsent(u, authorizeQuery(clientId, challenge));
    const withoutSession = cookie.replace(/pod_session=[^;]+;\s*/, "");
    const res = await postConsent(withoutSession, handle, "approve");
    expect(res.status).toBe(401);
  });

  it("never redirects to a redirect_uri the client did not register (no open redirect)", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    for (const redirect of [
      "https://evil.example/cb",
      "http://127.0.0.1:33418/other",
      `${REDIRECT_URI}/../x`,
    ]) {
      const res = await raw(`/authorize?${authorizeQuery(clientId, challenge, { redirect_uri: redirect })}`, {
        headers: { cookie: `pod_session=${u.token}` },
      });
      expect(res.status, redirect).toBe(400);
      expect(res.headers.get("location"), redirect).toBeNull();
    }
    const unknown = await raw(`/authorize?${authorizeQuery("no-such-client", challenge)}`, {
      headers: { cookie: `pod_session=${u.token}` },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get("location")).toBeNull();
  });

  it("refuses a request without PKCE, back to the (registered) client with the error", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const query = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      state: "s",
    }).toString();
    const res = await raw(`/authorize?${query}`, { headers: { cookie: `pod_session=${u.token}` } });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get("error")).toBe("invalid_request");
  });

  it("a wrong PKCE verifier gets no token", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const { handle, cookie } = await openConsent(u, authorizeQuery(clientId, challenge));
    const approved = await postConsent(cookie, handle, "approve");
    const code = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? "";
    const stolen = await exchangeCode(clientId, code, (await pkce()).verifier);
    expect(stolen.status).toBe(400);
    expect(stolen.json.error).toBe("invalid_grant");
  });

  it("escapes the client's self-chosen name on the consent page", async () => {
    const u = await registerUser();
    const clientId = await registerClient('<script>alert("x")</script><img src=x onerror=alert(1)>');
    const { challenge } = await pkce();
    const { page } = await openConsent(u, authorizeQuery(clientId, challenge));
    expect(page.text).not.toContain("<script>alert");
    expect(page.text).not.toContain("<img src=x");
    expect(page.text).toContain("&lt;script&gt;");
    expect(page.headers.get("x-frame-options") ?? page.headers.get("content-security-policy")).toBeTruthy();
    expect(page.text).toContain("127.0.0.1"); // where the tokens go, and the local-app warning
    expect(page.text).toContain("an app on your computer");
  });

  it("deny sends the user back to the client with access_denied and grants nothing", async () => {
    const u = await registerUser();
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const { handle, cookie } = await openConsent(u, authorizeQuery(clientId, challenge));
    const denied = await postConsent(cookie, handle, "deny");
    expect(denied.status).toBe(302);
    const location = new URL(denied.headers.get("location") ?? "");
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("state-123");
    expect(await first("SELECT id FROM connector_grants WHERE user_id = ?", u.user.id)).toBeNull();
  });

  it("answers a form with neither intent with 400", async () => {
    const res = await raw("/authorize", { method: "POST", headers: { ...FORM, origin: BASE }, body: "a=b" });
    expect(res.status).toBe(400);
    expect(res.text).toContain("intent");
  });
});
