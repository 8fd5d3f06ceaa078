import { describe, expect, it } from "vitest";
import { call, PASSWORD, sharedUser, uniqueEmail } from "./support/client";

const ERROR = { error: expect.any(String) };

describe("request bodies", () => {
  it("answers malformed JSON with 400 {error}", async () => {
    const res = await call("POST", "/api/auth/login", undefined, { raw: '{"email": "a@b.c", ' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR);
  });

  it("answers malformed JSON on an authenticated route with 400 {error}", async () => {
    const u = await sharedUser();
    const res = await call("POST", "/api/teams", undefined, { raw: "{name:", token: u.token });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR);
  });

  it.each([
    ["an array", "[]"],
    ["null", "null"],
    ["a number", "42"],
    ["a string", '"hello"'],
    ["an empty body", ""],
  ])("answers a JSON body that is %s with 400 {error}", async (_, raw) => {
    const res = await call("POST", "/api/auth/login", undefined, { raw });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR);
  });

  it("answers a body that is not JSON with 415 {error}", async () => {
    const res = await call("POST", "/api/auth/login", undefined, {
      raw: "email=a@b.c&password=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expect(res.body).toEqual(ERROR);
  });

  it("answers a missing body with 400 naming the fields", async () => {
    const res = await call("POST", "/api/auth/login");
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("email");
    expect(res.body.error).toContain("password");
  });

  it.each([
    ["email", { email: 123, password: PASSWORD, name: "X" }],
    ["password", { email: uniqueEmail(), password: 12345678, name: "X" }],
    ["name", { email: uniqueEmail(), password: PASSWORD, name: ["X"] }],
    ["name", { email: uniqueEmail(), password: PASSWORD, name: { first: "X" } }],
  ])("answers a wrong type with 400 naming the field (%s)", async (field, body) => {
    const res = await call("POST", "/api/auth/register", body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR);
    expect(res.body.error).toContain(field);
  });

  it("ignores unknown fields", async () => {
    const email = uniqueEmail();
    const res = await call("POST", "/api/auth/register", {
      email,
      password: PASSWORD,
      name: "Extra",
      is_admin: true,
      active_team_id: "team_someone_elses",
    });
    expect(res.status).toBe(201);
    expect(res.body.user).not.toHaveProperty("is_admin");
    expect(res.body.user.active_team_id).not.toBe("team_someone_elses");
  });

  it.each([
    ["a team name", "POST", "/api/teams", { name: "n".repeat(101) }, "name"],
    ["an API token name", "POST", "/api/api-tokens", { name: "n".repeat(101) }, "name"],
    ["a team id", "POST", "/api/teams/switch", { team_id: "t".repeat(65) }, "team_id"],
    [
      "a person's name",
      "POST",
      "/api/auth/register",
      { email: uniqueEmail(), password: PASSWORD, name: "n".repeat(101) },
      "name",
    ],
    [
      "an email",
      "POST",
      "/api/auth/register",
      { email: `${"e".repeat(250)}@x.io`, password: PASSWORD, name: "X" },
      "email",
    ],
    [
      "a login password",
      "POST",
      "/api/auth/login",
      { email: "a@b.c", password: "p".repeat(201) },
      "password",
    ],
    ["a reset token", "POST", "/api/auth/verify-email", { token: "t".repeat(201) }, "token"],
  ])("answers an oversized string (%s) with 400 naming the field", async (_, method, path, body, field) => {
    const u = await sharedUser();
    const res = await call(method, path, body, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
  });

  it("answers an oversized path parameter with 400", async () => {
    const u = await sharedUser();
    const res = await call("GET", `/api/teams/${"x".repeat(65)}`, undefined, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR);
  });

  it("answers a body over 1 MB with 413 {error}", async () => {
    const u = await sharedUser();
    const raw = JSON.stringify({ name: "x".repeat(1024 * 1024 + 1) });
    for (const path of ["/api/teams", "/api/auth/login"]) {
      const res = await call("POST", path, undefined, { raw, token: u.token });
      expect(res.status, path).toBe(413);
      expect(res.body).toEqual(ERROR);
    }
  });

  it("accepts a body just under 1 MB (and rejects the oversized field)", async () => {
    const u = await sharedUser();
    const raw = JSON.stringify({ name: "x".repeat(1000 * 1000) });
    const res = await call("POST", "/api/teams", undefined, { raw, token: u.token });
    expect(res.status).toBe(400);
  });
});

describe("routing", () => {
  it.each(["/api/nothing-here", "/api/teams/x/nothing", "/nothing", "/api"])(
    "answers an unknown path (%s) with 404 {error}",
    async (path) => {
      const res = await call("GET", path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(ERROR);
    },
  );

  it.each([
    ["DELETE", "/api/auth/login", ["POST"]],
    ["GET", "/api/auth/register", ["POST"]],
    ["PATCH", "/api/teams", ["GET", "POST"]],
    ["POST", "/api/teams/team_x", ["GET", "PUT", "DELETE"]],
    ["PUT", "/api/api-tokens", ["GET", "POST"]],
    ["POST", "/api/plans", ["GET"]],
  ])("answers %s %s with 405 {error} and Allow", async (method, path, allowed) => {
    const res = await call(method, path, method === "GET" ? undefined : {});
    expect(res.status).toBe(405);
    expect(res.body).toEqual(ERROR);
    const allow = (res.headers.get("allow") ?? "").split(/,\s*/).sort();
    expect(allow).toEqual([...allowed].sort());
  });

  it("does not answer 405 to the allowed method with a trailing slash", async () => {
    const u = await sharedUser();
    const res = await call("GET", "/api/teams/", undefined, { token: u.token });
    expect([200, 404]).toContain(res.status);
  });

  it("answers every reply with a request id", async () => {
    const res = await call("GET", "/api/nothing-here");
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });
});

describe("bad input never causes a 500", () => {
  const nasty: unknown[] = [
    null,
    [1, 2],
    "",
    { email: null, password: null, name: null, token: null, team_id: null },
    { email: {}, password: [], name: -1e300, token: { $ne: null }, team_id: 7 },
    { email: "a@b.c'; DROP TABLE users; --", password: "x' OR '1'='1", name: "\u0000\uFFFF\uD800" },
    { expires_in_days: 1e308, name: "💥".repeat(50), email: "ünïcödé@exämple.test", role: "owner" },
    { __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } },
  ];
  const routes: [string, string][] = [
    ["POST", "/api/auth/register"],
    ["POST", "/api/auth/login"],
    ["POST", "/api/auth/forgot-password"],
    ["POST", "/api/auth/reset-password"],
    ["POST", "/api/auth/verify-email"],
    ["POST", "/api/teams"],
    ["POST", "/api/teams/switch"],
    ["PUT", "/api/teams/{team}"],
    ["POST", "/api/teams/{team}/members"],
    ["POST", "/api/teams/{team}/invitations"],
    ["POST", "/api/invitations/accept"],
    ["POST", "/api/api-tokens"],
  ];

  it("for any of a battery of odd bodies on every writing route", { timeout: 30_000 }, async () => {
    const u = await sharedUser();
    const cases = routes.flatMap(([method, template]) =>
      nasty.map((body) => ({
        method,
        path: template.replace("{team}", u.user.active_team_id),
        raw: JSON.stringify(body),
        token: u.token,
      })),
    );
    const replies = await Promise.all(cases.map((c) => call(c.method, c.path, undefined, c)));
    replies.forEach((res, i) => {
      const label = `${cases[i]?.method} ${cases[i]?.path} ${cases[i]?.raw}`;
      expect(res.status, label).toBeLessThan(500);
      expect(res.body, label).toEqual(res.status < 300 ? expect.anything() : ERROR);
    });
  });

  it("for odd path parameters", { timeout: 20_000 }, async () => {
    const u = await sharedUser();
    const ids = ["%00", "..%2F..", "'%20OR%201=1", "%F0%9F%92%A5", "%E0%A4%A", "null", "a".repeat(64)];
    for (const id of ids) {
      for (const path of [
        `/api/teams/${id}`,
        `/api/teams/${id}/members`,
        `/api/teams/${id}/members/${id}`,
        `/api/invitations/${id}`,
      ]) {
        const res = await call("GET", path, undefined, { token: u.token });
        expect(res.status, path).toBeLessThan(500);
        expect(res.body, path).toEqual(res.status < 300 ? expect.anything() : ERROR);
      }
      const del = await call("DELETE", `/api/api-tokens/${id}`, undefined, { token: u.token });
      expect(del.status, id).toBeLessThan(500);
    }
  });
});
