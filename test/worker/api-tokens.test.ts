import { describe, expect, it } from "vitest";
import { call, registerUser, sharedUser, type TestUser } from "./support/client";
import { connect } from "./support/connectors";
import { connectorSession, expireApiToken, first, sha256Hex } from "./support/db";
import { KEYS } from "./support/ssh-keys";
import { createTeam } from "./support/teams";

const DAY = 86_400_000;
const RECORD_KEYS = [
  "created_at",
  "expires_at",
  "id",
  "last_used_at",
  "name",
  "prefix",
  "team_id",
  "user_id",
];

async function createToken(user: TestUser | string, body: Record<string, unknown> = { name: "ci" }) {
  const token = typeof user === "string" ? user : user.token;
  const res = await call("POST", "/api/api-tokens", body, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as {
    id: string;
    token: string;
    team_id: string;
    prefix: string;
    expires_at: string | null;
  };
}

const listTokens = async (token: string) => (await call("GET", "/api/api-tokens", undefined, { token })).body;

describe("POST /api/api-tokens", () => {
  it("answers 201 with an ipk_ token shown once, its prefix, bound to the active team", async () => {
    const u = await registerUser();
    const res = await call("POST", "/api/api-tokens", { name: "deploy bot" }, { token: u.token });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...RECORD_KEYS, "token"].sort());
    expect(res.body.token).toMatch(/^ipk_[0-9a-z]{20,}$/);
    expect(res.body).toMatchObject({
      name: "deploy bot",
      user_id: u.user.id,
      team_id: u.user.active_team_id,
      prefix: res.body.token.slice(0, 12),
      last_used_at: null,
      expires_at: null,
    });
    expect(res.body.prefix).toHaveLength(12);

    const list = await listTokens(u.token);
    expect(list).toHaveLength(1);
    expect(Object.keys(list[0]).sort()).toEqual(RECORD_KEYS);
    expect(list[0]).not.toHaveProperty("token");
    const { token: _shownOnce, ...record } = res.body;
    expect(list[0]).toEqual(record);
  });

  it("stores only the token's hash", async () => {
    const u = await registerUser();
    const created = await createToken(u);
    const row = await first<{ token_hash: string }>(
      "SELECT token_hash FROM api_tokens WHERE id = ?",
      created.id,
    );
    expect(row?.token_hash).toBe(await sha256Hex(created.token));
  });

  it.each([
    [undefined, null],
    [0, null],
    [1, 1],
    [30, 30],
    [3650, 3650],
  ])("expires_in_days %s gives an expiry in %s days", async (days, expected) => {
    const u = await sharedUser();
    const body = days === undefined ? { name: "t" } : { name: "t", expires_in_days: days };
    const created = await createToken(u, body);
    if (expected === null) {
      expect(created.expires_at).toBeNull();
    } else {
      const inDays = (Date.parse(created.expires_at ?? "") - Date.now()) / DAY;
      expect(Math.abs(inDays - expected)).toBeLessThan(0.01);
    }
  });

  it.each([
    ["expires_in_days 3651", { name: "t", expires_in_days: 3651 }, "expires_in_days"],
    ["expires_in_days 1.5", { name: "t", expires_in_days: 1.5 }, "expires_in_days"],
    ["expires_in_days -1", { name: "t", expires_in_days: -1 }, "expires_in_days"],
    ["expires_in_days as a string", { name: "t", expires_in_days: "30" }, "expires_in_days"],
    ["expires_in_days null", { name: "t", expires_in_days: null }, "expires_in_days"],
    ["a missing name", {}, "name"],
    ["an empty name", { name: "" }, "name"],
    ["a 101-character name", { name: "n".repeat(101) }, "name"],
    ["a numeric name", { name: 5 }, "name"],
  ])("answers 400 naming the field for %s", async (_, body, field) => {
    const u = await sharedUser();
    const before = await listTokens(u.token);
    const res = await call("POST", "/api/api-tokens", body, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
    expect(await listTokens(u.token)).toEqual(before);
  });

  it("accepts a 100-character name", async () => {
    const u = await registerUser();
    const created = await createToken(u, { name: "n".repeat(100) });
    expect(created).toMatchObject({ name: "n".repeat(100) });
  });

  it("answers 403 to a connector session", async () => {
    const u = await registerUser();
    const connector = await connectorSession(u);
    const res = await call("POST", "/api/api-tokens", { name: "nope" }, { token: connector });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual(expect.any(String));
    // Nor can it list the account's tokens (docs/auth.md, "What a team-bound credential may do").
    expect((await call("GET", "/api/api-tokens", undefined, { token: connector })).status).toBe(403);
  });

  it("answers 403 to an API token: a leaked token cannot mint its own successors", async () => {
    const u = await registerUser();
    const created = await createToken(u);
    const res = await call("POST", "/api/api-tokens", { name: "child" }, { token: created.token });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatch(/API token acts on its own team only/);
    expect((await listTokens(u.token)).map((t: { id: string }) => t.id)).toEqual([created.id]);
  });
});

describe("using an API token", () => {
  it("authenticates as the user and records last_used_at", async () => {
    const u = await registerUser();
    const created = await createToken(u);
    const me = await call("GET", "/api/auth/user", undefined, { token: created.token });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(u.user.id);

    // Written after the response (waitUntil): poll briefly.
    let lastUsed: string | null = null;
    for (let i = 0; i < 50 && !lastUsed; i++) {
      lastUsed = (await listTokens(u.token))[0].last_used_at;
      if (!lastUsed) await new Promise((r) => setTimeout(r, 20));
    }
    expect(lastUsed).not.toBeNull();
    expect(Math.abs(Date.parse(lastUsed ?? "") - Date.now())).toBeLessThan(60_000);
  });

  it("keeps acting on the team active at its creation after the user switches", async () => {
    const u = await registerUser();
    const personal = u.user.active_team_id;
    const created = await createToken(u);
    expect(created.team_id).toBe(personal);

    const other = await createTeam(u);
    const switched = await call("POST", "/api/teams/switch", { team_id: other.id }, { token: u.token });
    expect(switched.body.active_team_id).toBe(other.id);

    // The token still acts on its own team; a token made with the session follows the switch.
    expect((await call("GET", `/api/teams/${personal}`, undefined, { token: created.token })).status).toBe(
      200,
    );
    expect((await call("GET", `/api/teams/${other.id}`, undefined, { token: created.token })).status).toBe(
      404,
    );
    const fromSession = await createToken(u, { name: "session" });
    expect(fromSession.team_id).toBe(other.id);
  });

  it("answers 401 once the token has expired", async () => {
    const u = await registerUser();
    const created = await createToken(u, { name: "short", expires_in_days: 1 });
    await expireApiToken(created.id);
    expect((await call("GET", "/api/auth/user", undefined, { token: created.token })).status).toBe(401);
  });

  it("is not a session: logout with it answers 400 and the token keeps working", async () => {
    const u = await registerUser();
    const created = await createToken(u);
    const res = await call("POST", "/api/auth/logout", undefined, { token: created.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual(expect.any(String));
    expect((await call("GET", "/api/auth/user", undefined, { token: created.token })).status).toBe(200);
  });
});

describe("DELETE /api/api-tokens/{id}", () => {
  it("revokes the token: its next use is 401; sessions stay", async () => {
    const u = await registerUser();
    const created = await createToken(u);
    expect((await call("GET", "/api/auth/user", undefined, { token: created.token })).status).toBe(200);
    const res = await call("DELETE", `/api/api-tokens/${created.id}`, undefined, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect((await call("GET", "/api/auth/user", undefined, { token: created.token })).status).toBe(401);
    expect(await listTokens(u.token)).toEqual([]);
    expect((await call("GET", "/api/auth/user", undefined, { token: u.token })).status).toBe(200);
  });

  it("a token can revoke itself", async () => {
    const u = await registerUser();
    const created = await createToken(u);
    const res = await call("DELETE", `/api/api-tokens/${created.id}`, undefined, { token: created.token });
    expect(res.status).toBe(200);
    expect((await call("GET", "/api/auth/user", undefined, { token: created.token })).status).toBe(401);
  });

  it("answers 403 for someone else's token and 404 for an unknown one", async () => {
    const [a, b] = await Promise.all([registerUser(), registerUser()]);
    const created = await createToken(a);
    const theirs = await call("DELETE", `/api/api-tokens/${created.id}`, undefined, { token: b.token });
    expect(theirs.status).toBe(403);
    expect(theirs.body.error).toEqual(expect.any(String));
    expect((await call("GET", "/api/auth/user", undefined, { token: created.token })).status).toBe(200);

    const unknown = await call("DELETE", "/api/api-tokens/tok_doesnotexist", undefined, { token: b.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toEqual(expect.any(String));
  });
});

describe("an API token acts on its own team only (attacker: a leaked token)", () => {
  it("answers 404 on every route of the user's other teams; listing the teams stays", async () => {
    const u = await registerUser();
    const personal = u.user.active_team_id;
    const { token } = await createToken(u);
    const other = await createTeam(u);
    const as = { token };
    const routes: [string, string, unknown?][] = [
      ["GET", `/api/teams/${other.id}`],
      ["PUT", `/api/teams/${other.id}`, { name: "Renamed by a token" }],
      ["DELETE", `/api/teams/${other.id}`],
      ["GET", `/api/teams/${other.id}/members`],
      ["GET", `/api/teams/${other.id}/members/details`],
      ["POST", `/api/teams/${other.id}/members`, { email: "x@example.test", role: "member" }],
      ["DELETE", `/api/teams/${other.id}/members/${u.user.id}`],
      ["GET", `/api/teams/${other.id}/invitations`],
      ["POST", `/api/teams/${other.id}/invitations`, { email: "x@example.test", role: "member" }],
      ["DELETE", `/api/teams/${other.id}/invitations/inv_nope`],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, as);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // Switching the active team is the account's (it moves the user's browser sessions): 403.
    const switched = await call("POST", "/api/teams/switch", { team_id: other.id }, as);
    expect(switched.status).toBe(403);
    // The team is untouched, and the session (not bound to a team) still reaches it.
    const seen = await call("GET", `/api/teams/${other.id}`, undefined, { token: u.token });
    expect(seen).toMatchObject({ status: 200, body: { name: other.name } });
    // Its own team answers; the list of the user's teams stays.
    expect((await call("GET", `/api/teams/${personal}`, undefined, as)).status).toBe(200);
    const listed = await call("GET", "/api/teams", undefined, as);
    expect(listed.status).toBe(200);
    expect(listed.body.map((t: { id: string }) => t.id).sort()).toEqual([personal, other.id].sort());
  });
});

/**
 * docs/auth.md "What a team-bound credential may do": an `ipk_` token or a connector session bound
 * to team P reads its own user, lists its teams and revokes itself; everything else that is the
 * account's, not P's, is 403 — and changes nothing.
 */
describe("a team-bound credential cannot change account-wide state (attacker: a leaked token, an assistant)", () => {
  const bound = {
    "an API token": async (u: TestUser) => {
      const made = await createToken(u);
      return { token: made.token, self: `/api/api-tokens/${made.id}` };
    },
    "a connector session": async (u: TestUser) => {
      const c = await connect(u);
      return { token: c.accessToken, self: `/api/connectors/${await grantIdOf(u, c.clientId)}` };
    },
  };

  it.each(Object.keys(bound) as (keyof typeof bound)[])("%s: 403 on the account's routes", async (kind) => {
    const u = await registerUser();
    const teamB = await createTeam(u);
    const key = await call("POST", "/api/ssh-keys", { public_key: KEYS.ed25519.line }, { token: u.token });
    expect(key.status).toBe(201);
    expect((await call("POST", "/api/affiliates/enroll", undefined, { token: u.token })).status).toBe(201);
    const otherToken = await createToken(u, { name: "someone else's ci" });
    const otherGrant = await connect(u, "Another Assistant");
    const { token, self } = await bound[kind](u);
    const as = { token };

    const refused: [string, string, unknown?][] = [
      ["POST", "/api/ssh-keys", { public_key: KEYS.rsa2048.line, auto_inject: true }],
      ["GET", "/api/ssh-keys"],
      ["PUT", `/api/ssh-keys/${key.body.id}`, { auto_inject: true }],
      ["DELETE", `/api/ssh-keys/${key.body.id}`],
      ["PUT", "/api/affiliates/settings", { paypal_email: "attacker@example.test" }],
      ["GET", "/api/affiliates/dashboard"],
      ["GET", "/api/affiliates/earnings"],
      ["POST", "/api/affiliates/enroll"],
      ["GET", "/api/api-tokens"],
      ["POST", "/api/api-tokens", { name: "persistence" }],
      ["DELETE", `/api/api-tokens/${otherToken.id}`],
      ["GET", "/api/connectors"],
      ["DELETE", `/api/connectors/${await grantIdOf(u, otherGrant.clientId)}`],
      ["GET", "/api/billing/payment-methods/other-teams"],
      ["POST", "/api/teams", { name: "made by a token" }],
      ["POST", "/api/teams/switch", { team_id: teamB.id }],
      ["POST", "/api/teams/switch", { team_id: u.user.active_team_id }],
      ["POST", "/api/auth/resend-verification"],
    ];
    for (const [method, path, body] of refused) {
      const res = await call(method, path, body, as);
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(res.body.error).toMatch(/acts on its own team only/);
    }

    // Nothing changed: seen by the account's own session.
    const keys = await call("GET", "/api/ssh-keys", undefined, { token: u.token });
    expect(keys.body).toEqual([expect.objectContaining({ id: key.body.id, auto_inject: false })]);
    const dashboard = await call("GET", "/api/affiliates/dashboard", undefined, { token: u.token });
    expect(dashboard.body.affiliate.paypal_email).toBeNull();
    expect((await call("GET", "/api/auth/user", undefined, { token: otherToken.token })).status).toBe(200);
    expect((await call("GET", "/api/pods", undefined, { token: otherGrant.accessToken })).status).toBe(200);
    const teams = await call("GET", "/api/teams", undefined, { token: u.token });
    expect(teams.body.map((t: { id: string }) => t.id).sort()).toEqual(
      [u.user.active_team_id, teamB.id].sort(),
    );
    const me = await call("GET", "/api/auth/user", undefined, { token: u.token });
    expect(me.body.active_team_id).toBe(u.user.active_team_id);

    // What stays open: its own user, its teams, its own team's routes, and ending itself.
    expect((await call("GET", "/api/auth/user", undefined, as)).body.id).toBe(u.user.id);
    expect((await call("GET", "/api/teams", undefined, as)).status).toBe(200);
    expect((await call("GET", `/api/teams/${u.user.active_team_id}`, undefined, as)).status).toBe(200);
    expect((await call("GET", "/api/pods", undefined, as)).status).toBe(200);
    expect((await call("DELETE", self, undefined, as)).status).toBe(200);
    expect((await call("GET", "/api/auth/user", undefined, as)).status).toBe(401);
  });
});

async function grantIdOf(u: TestUser, clientId: string): Promise<string> {
  const listed = await call("GET", "/api/connectors", undefined, { token: u.token });
  return listed.body.connectors.find((g: { client_id: string }) => g.client_id === clientId).id;
}
