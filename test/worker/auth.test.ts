import { describe, expect, it } from "vitest";
import {
  call,
  login,
  PASSWORD,
  registerUser,
  sessionCookie,
  sessionSetCookie,
  uniqueEmail,
} from "./support/client";
import { expireOneTimeTokens, mailsTo, tokenFromMail } from "./support/db";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const USER_KEYS = ["active_team_id", "created_at", "email", "email_verified", "id", "name"];

const register = (body: unknown) => call("POST", "/api/auth/register", body);

describe("POST /api/auth/register", () => {
  it("answers 201 {token, user}, sets the session cookie and makes a personal team active", async () => {
    const email = uniqueEmail("reg");
    const res = await register({ email, password: PASSWORD, name: "Grace Hopper" });
    expect(res.status).toBe(201);
    expect(typeof res.body.token).toBe("string");
    expect(Object.keys(res.body.user).sort()).toEqual(USER_KEYS);
    expect(res.body.user).toMatchObject({ email, name: "Grace Hopper", email_verified: false });
    expect(res.body.user.created_at).toMatch(ISO);

    const cookie = sessionSetCookie(res);
    expect(cookie).toBeDefined();
    expect(cookie).toContain(`pod_session=${res.body.token}`);
    expect(cookie).toMatch(/;\s*HttpOnly/i);
    expect(cookie).toMatch(/;\s*SameSite=Lax/i);
    expect(cookie).toMatch(/;\s*Path=\//i);
    expect(cookie).toMatch(/;\s*Max-Age=2592000/i); // 30 days
    // PUBLIC_URL is http://localhost: a Secure cookie would be dropped by the browser.
    expect(cookie).not.toMatch(/;\s*Secure/i);

    const teams = await call("GET", "/api/teams", undefined, { token: res.body.token });
    expect(teams.body).toHaveLength(1);
    expect(teams.body[0]).toMatchObject({
      id: res.body.user.active_team_id,
      owner_id: res.body.user.id,
      account_type: "personal",
      role: "owner",
    });
  });

  it("stores the email lowercased", async () => {
    const email = uniqueEmail("Mixed.Case");
    const res = await register({ email: email.toUpperCase(), password: PASSWORD, name: "Case" });
    expect(res.status).toBe(201);
    expect(res.body.user.email).toBe(email.toLowerCase());
  });

  it.each([
    ["an invalid email", { email: "not-an-email", password: PASSWORD, name: "X" }, "email"],
    ["a 7-character password", { email: uniqueEmail(), password: "1234567", name: "X" }, "password"],
    ["a 201-character password", { email: uniqueEmail(), password: "p".repeat(201), name: "X" }, "password"],
    ["a missing email", { password: PASSWORD, name: "X" }, "email"],
    ["a missing password", { email: uniqueEmail(), name: "X" }, "password"],
    ["a missing name", { email: uniqueEmail(), password: PASSWORD }, "name"],
    ["a blank name", { email: uniqueEmail(), password: PASSWORD, name: "   " }, "name"],
    ["a 101-character name", { email: uniqueEmail(), password: PASSWORD, name: "n".repeat(101) }, "name"],
  ])("answers 400 naming the field for %s", async (_, body, field) => {
    const res = await register(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
  });

  it("accepts passwords of exactly 8 and 200 characters", async () => {
    for (const password of ["12345678", "p".repeat(200)]) {
      const res = await register({ email: uniqueEmail(), password, name: "Edge" });
      expect(res.status).toBe(201);
    }
  });

  it("answers 409 for a taken email, also in another case", async () => {
    const email = uniqueEmail("taken");
    expect((await register({ email, password: PASSWORD, name: "First" })).status).toBe(201);
    const again = await register({ email, password: PASSWORD, name: "Second" });
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual(expect.any(String));
    const upper = await register({ email: email.toUpperCase(), password: PASSWORD, name: "Third" });
    expect(upper.status).toBe(409);
  });

  it("lets exactly one of two racing registrations of one email through", async () => {
    const email = uniqueEmail("race");
    const replies = await Promise.all(
      [1, 2].map(() => register({ email, password: PASSWORD, name: "Racer" })),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409]);
  });
});

describe("POST /api/auth/login", () => {
  it("answers 200 {token, user} with a new session and sets the cookie", async () => {
    const u = await registerUser();
    const res = await call("POST", "/api/auth/login", { email: u.user.email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.token).not.toBe(u.token);
    const me = await call("GET", "/api/auth/user", undefined, { token: u.token });
    expect(res.body.user).toEqual(me.body);
    expect(sessionSetCookie(res)).toContain(`pod_session=${res.body.token}`);
  });

  it("matches the email case-insensitively", async () => {
    const u = await registerUser();
    const res = await call("POST", "/api/auth/login", {
      email: u.user.email.toUpperCase(),
      password: PASSWORD,
    });
    expect(res.status).toBe(200);
  });

  it("answers 401 with the same message for a wrong password and an unknown email", async () => {
    const u = await registerUser();
    const wrongPassword = await call("POST", "/api/auth/login", {
      email: u.user.email,
      password: "wrong password",
    });
    const unknownEmail = await call("POST", "/api/auth/login", {
      email: uniqueEmail("nobody"),
      password: PASSWORD,
    });
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    expect(wrongPassword.body.error).toEqual(expect.any(String));
    expect(wrongPassword.body).toEqual(unknownEmail.body);
    expect(sessionSetCookie(wrongPassword)).toBeUndefined();
  });

  it.each([
    ["email", { password: PASSWORD }],
    ["password", { email: "someone@example.test" }],
  ])("answers 400 naming a missing %s", async (field, body) => {
    const res = await call("POST", "/api/auth/login", body);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
  });
});

describe("POST /api/auth/logout", () => {
  it("ends only the session that made the call (bearer)", async () => {
    const u = await registerUser();
    const other = await login(u.user.email);
    const res = await call("POST", "/api/auth/logout", undefined, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "logged_out" });
    expect((await call("GET", "/api/auth/user", undefined, { token: u.token })).status).toBe(401);
    expect((await call("GET", "/api/auth/user", undefined, { token: other })).status).toBe(200);
  });

  it("ends a cookie session and clears the cookie", async () => {
    const u = await registerUser();
    const signIn = await call("POST", "/api/auth/login", { email: u.user.email, password: PASSWORD });
    const cookie = sessionCookie(signIn);
    expect((await call("GET", "/api/auth/user", undefined, { cookie })).status).toBe(200);

    const res = await call("POST", "/api/auth/logout", undefined, { cookie });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "logged_out" });
    expect(sessionSetCookie(res)).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/i);
    expect((await call("GET", "/api/auth/user", undefined, { cookie })).status).toBe(401);
    expect((await call("GET", "/api/auth/user", undefined, { token: u.token })).status).toBe(200);
  });

  it("answers 401 without credentials", async () => {
    expect((await call("POST", "/api/auth/logout")).status).toBe(401);
  });
});

describe("the session cookie where the API is https (attacker: a sibling host tossing a pod_session cookie)", () => {
  const HTTPS = { PUBLIC_URL: "https://api.podhost.test" };
  const BROWSER = { "sec-fetch-site": "same-origin" };
  const cookieLine = (res: { headers: Headers }, name: string) =>
    res.headers.getAll("set-cookie").find((line) => line.startsWith(`${name}=`));
  const me = (cookie: string, headers: Record<string, string> = {}) =>
    call("GET", "/api/auth/user", undefined, { cookie, headers, env: HTTPS });

  it("login sets __Host-pod_session (Secure, Path=/, no Domain) beside the spec's pod_session", async () => {
    const u = await registerUser();
    const res = await call(
      "POST",
      "/api/auth/login",
      { email: u.user.email, password: PASSWORD },
      { env: HTTPS },
    );
    expect(res.status).toBe(200);
    const own = cookieLine(res, "__Host-pod_session");
    expect(own).toContain(`__Host-pod_session=${res.body.token}`);
    for (const attribute of [/;\s*Secure/i, /;\s*Path=\/(;|$)/i, /;\s*HttpOnly/i, /;\s*SameSite=Lax/i]) {
      expect(own).toMatch(attribute);
    }
    expect(own).not.toMatch(/;\s*Domain=/i);
    const plain = cookieLine(res, "pod_session");
    expect(plain).toContain(`pod_session=${res.body.token}`);
    expect(plain).toMatch(/;\s*Secure/i);
    // Plain http (local development): only pod_session, as browsers refuse a __Host- cookie there.
    const local = await call("POST", "/api/auth/login", { email: u.user.email, password: PASSWORD });
    expect(cookieLine(local, "__Host-pod_session")).toBeUndefined();
  });

  it("signs a browser in by __Host-pod_session only: a tossed pod_session neither signs it in nor shadows its own", async () => {
    const [victim, attacker] = await Promise.all([registerUser("Victim"), registerUser("Attacker")]);
    // Signed out, with the attacker's session tossed in for the whole domain: not signed in as them.
    const tossed = await me(`pod_session=${attacker.token}`, BROWSER);
    expect(tossed.status).toBe(401);
    // Signed in: the tossed cookie comes first (a longer path is sent first); the browser's own wins.
    const both = await me(`pod_session=${attacker.token}; __Host-pod_session=${victim.token}`, BROWSER);
    expect(both.body.id).toBe(victim.user.id);
    // A client that is no browser (the spec's clients, curl) keeps signing in with pod_session.
    expect((await me(`pod_session=${victim.token}`)).body.id).toBe(victim.user.id);
  });

  it("logout clears both cookies", async () => {
    const u = await registerUser();
    const signIn = await call(
      "POST",
      "/api/auth/login",
      { email: u.user.email, password: PASSWORD },
      { env: HTTPS },
    );
    const cookie = `__Host-pod_session=${signIn.body.token}`;
    expect((await me(cookie, BROWSER)).body.id).toBe(u.user.id);
    const out = await call("POST", "/api/auth/logout", undefined, { cookie, headers: BROWSER, env: HTTPS });
    expect(out.status).toBe(200);
    for (const name of ["__Host-pod_session", "pod_session"]) {
      expect(cookieLine(out, name)).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/i);
    }
    expect((await me(cookie, BROWSER)).status).toBe(401);
  });
});

describe("GET /api/auth/user", () => {
  it("answers {id, email, name, email_verified, active_team_id, created_at}", async () => {
    const u = await registerUser("Katherine Johnson");
    const res = await call("GET", "/api/auth/user", undefined, { token: u.token });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
    expect(res.body).toEqual(u.user);
    expect(res.body.id).toMatch(/^usr_/);
  });
});

describe("password reset", () => {
  const forgot = (email: string) => call("POST", "/api/auth/forgot-password", { email });
  const reset = (token: string, password: string) =>
    call("POST", "/api/auth/reset-password", { token, password });

  it("answers {status: sent} for an unknown email and mails nothing", async () => {
    const email = uniqueEmail("ghost");
    const res = await forgot(email);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "sent" });
    expect(await mailsTo(email)).toEqual([]);
  });

  it("answers 400 for an invalid email", async () => {
    const res = await forgot("nope");
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("email");
  });

  it("mails a single-use token that sets the password and ends every session", async () => {
    const u = await registerUser();
    const second = await login(u.user.email);
    const res = await forgot(u.user.email.toUpperCase());
    expect(res.body).toEqual({ status: "sent" });
    const token = await tokenFromMail(u.user.email, "Reset token");

    const done = await reset(token, "a brand new password");
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ status: "password_reset" });

    for (const session of [u.token, second]) {
      expect((await call("GET", "/api/auth/user", undefined, { token: session })).status).toBe(401);
    }
    const oldPassword = await call("POST", "/api/auth/login", { email: u.user.email, password: PASSWORD });
    expect(oldPassword.status).toBe(401);
    const newPassword = await call("POST", "/api/auth/login", {
      email: u.user.email,
      password: "a brand new password",
    });
    expect(newPassword.status).toBe(200);

    const again = await reset(token, "yet another password");
    expect(again.status).toBe(400);
    expect(again.body.error).toContain("token");
  });

  it("answers 400 for an expired token", async () => {
    const u = await registerUser();
    await forgot(u.user.email);
    const token = await tokenFromMail(u.user.email, "Reset token");
    await expireOneTimeTokens(u.user.email);
    const res = await reset(token, "a brand new password");
    expect(res.status).toBe(400);
    expect((await call("GET", "/api/auth/user", undefined, { token: u.token })).status).toBe(200);
  });

  it("answers 400 for an unknown token, and for a verification token", async () => {
    const u = await registerUser();
    expect((await reset("not-a-token", "a brand new password")).status).toBe(400);
    const verification = await tokenFromMail(u.user.email, "Verification token");
    expect((await reset(verification, "a brand new password")).status).toBe(400);
  });

  it("validates the new password before spending the token", async () => {
    const u = await registerUser();
    await forgot(u.user.email);
    const token = await tokenFromMail(u.user.email, "Reset token");
    const short = await reset(token, "short");
    expect(short.status).toBe(400);
    expect(short.body.error).toContain("password");
    expect((await reset(token, "long enough now")).status).toBe(200);
  });

  it("answers 400 naming a missing token", async () => {
    const res = await call("POST", "/api/auth/reset-password", { password: "long enough now" });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("token");
  });
});

describe("email verification", () => {
  it("verifies with the token mailed at registration", async () => {
    const u = await registerUser();
    const token = await tokenFromMail(u.user.email, "Verification token");
    const res = await call("POST", "/api/auth/verify-email", { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "verified" });
    const me = await call("GET", "/api/auth/user", undefined, { token: u.token });
    expect(me.body.email_verified).toBe(true);
    expect((await call("POST", "/api/auth/verify-email", { token })).status).toBe(400);
  });

  it("answers 400 for a bad token and a missing one", async () => {
    const bad = await call("POST", "/api/auth/verify-email", { token: "bogus" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("token");
    expect((await call("POST", "/api/auth/verify-email", {})).status).toBe(400);
  });

  it("resend-verification answers {status: sent} and mails a fresh working token", async () => {
    const u = await registerUser();
    const before = (await mailsTo(u.user.email)).length;
    const res = await call("POST", "/api/auth/resend-verification", undefined, { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "sent" });
    expect(await mailsTo(u.user.email)).toHaveLength(before + 1);
    const token = await tokenFromMail(u.user.email, "Verification token");
    expect((await call("POST", "/api/auth/verify-email", { token })).status).toBe(200);

    // Already verified: same answer, nothing more to mail.
    const after = await call("POST", "/api/auth/resend-verification", undefined, { token: u.token });
    expect(after.status).toBe(200);
    expect(after.body).toEqual({ status: "sent" });
    expect(await mailsTo(u.user.email)).toHaveLength(before + 1);
  });

  it("resend-verification answers 401 without credentials", async () => {
    expect((await call("POST", "/api/auth/resend-verification")).status).toBe(401);
  });
});
