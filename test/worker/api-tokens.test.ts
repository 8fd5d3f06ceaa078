import { describe, expect, it } from "vitest";
import { call, registerUser, sharedUser, type TestUser } from "./support/client";
import { connectorSession, expireApiToken, first, sha256Hex } from "./support/db";
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
    // Everything else works for a connector session, listing tokens included.
    const list = await call("GET", "/api/api-tokens", undefined, { token: connector });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
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

    // A token made with the API token is bound to the API token's team, not the user's active one.
    const child = await createToken(created.token, { name: "child" });
    expect(child.team_id).toBe(personal);
    // A token made with the session follows the switch.
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
      ["POST", "/api/teams/switch", { team_id: other.id }],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, as);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
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
