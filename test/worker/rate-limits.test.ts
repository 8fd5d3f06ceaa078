import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { rateLimitAddress } from "../../shared/net/addresses";
import { call, freshIp, PASSWORD, registerUser, uniqueEmail } from "./support/client";
import { createTeam, invite } from "./support/teams";

const loginFrom = (ip: string, email: string, password = "wrong password") =>
  call("POST", "/api/auth/login", { email, password }, { ip });

function expectLimited(res: { status: number; headers: Headers; body: { error?: unknown } }) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ error: expect.any(String) });
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe("POST /api/auth/login: 5 per minute per IP", () => {
  it("answers the 6th login in a minute from one IP with 429 and Retry-After; other IPs are unaffected", async () => {
    const u = await registerUser();
    const ip = freshIp();
    for (let i = 0; i < 5; i++) expect((await loginFrom(ip, u.user.email)).status).toBe(401);
    expectLimited(await loginFrom(ip, u.user.email));
    // Even the right password waits.
    expectLimited(await loginFrom(ip, u.user.email, PASSWORD));
    expect((await loginFrom(freshIp(), u.user.email, PASSWORD)).status).toBe(200);
  });

  it("counts successful logins too", async () => {
    const u = await registerUser();
    const ip = freshIp();
    for (let i = 0; i < 5; i++) expect((await loginFrom(ip, u.user.email, PASSWORD)).status).toBe(200);
    expectLimited(await loginFrom(ip, u.user.email, PASSWORD));
  });

  it("lets exactly 5 of a concurrent burst of 20 through", async () => {
    const ip = freshIp();
    const email = uniqueEmail("burst");
    const replies = await Promise.all(Array.from({ length: 20 }, () => loginFrom(ip, email)));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
  });

  it("limits each route separately", async () => {
    const ip = freshIp();
    const email = uniqueEmail();
    for (let i = 0; i < 5; i++) await loginFrom(ip, email);
    expectLimited(await loginFrom(ip, email));
    const forgot = await call("POST", "/api/auth/forgot-password", { email }, { ip });
    expect(forgot.status).toBe(200);
  });
});

describe("per-IP limits count an IPv6 address by its /64 (attacker: one subscriber's 2^64 addresses)", () => {
  it("answers the 6th login from another address of the same /64 with 429; the next /64 has its own budget", async () => {
    const u = await registerUser();
    const ip = freshIp(); // `<48 bits>:<16 bits>::1`, a /64 of its own
    const sibling = ip.replace(/::1$/, ":1234:5678:9abc:def0"); // same /64, another interface id
    expect(sibling).not.toBe(ip);
    for (let i = 0; i < 5; i++) expect((await loginFrom(ip, u.user.email)).status).toBe(401);
    expectLimited(await loginFrom(sibling, u.user.email));
    expectLimited(await loginFrom(sibling.toUpperCase(), u.user.email));
    expect((await loginFrom(freshIp(), u.user.email, PASSWORD)).status).toBe(200);
  });

  it("keys an address as Cloudflare may spell it: /64 for IPv6, an IPv4-mapped one as its IPv4", () => {
    expect(rateLimitAddress("2001:DB8:0:1:ffff::1")).toBe("2001:db8:0:1::/64");
    expect(rateLimitAddress("2001:db8:0:1::")).toBe("2001:db8:0:1::/64");
    expect(rateLimitAddress("2001:0db8:0000:0001:1:2:3:4")).toBe("2001:db8:0:1::/64");
    expect(rateLimitAddress("2001:db8::")).toBe("2001:db8:0:0::/64");
    expect(rateLimitAddress("2001:db8:0:2::1")).toBe("2001:db8:0:2::/64");
    expect(rateLimitAddress("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(rateLimitAddress("203.0.113.9")).toBe("203.0.113.9");
    expect(rateLimitAddress("unknown")).toBe("unknown");
  });
});

describe("POST /api/auth/register: 3 per minute per IP", () => {
  it("answers the 4th registration with 429", async () => {
    const ip = freshIp();
    const register = (email: string) =>
      call("POST", "/api/auth/register", { email, password: PASSWORD, name: "Rate" }, { ip });
    for (let i = 0; i < 3; i++) expect((await register(uniqueEmail())).status).toBe(201);
    const email = uniqueEmail();
    expectLimited(await register(email));
    // Nothing was created by the refused request.
    expect((await call("POST", "/api/auth/login", { email, password: PASSWORD })).status).toBe(401);
    expect((await register(uniqueEmail())).status).toBe(429);
    expect(
      (await call("POST", "/api/auth/register", { email, password: PASSWORD, name: "Other IP" })).status,
    ).toBe(201);
  });
});

describe("POST /api/auth/forgot-password: 3 per minute per IP", () => {
  it("answers the 4th request with 429", async () => {
    const ip = freshIp();
    const email = uniqueEmail();
    for (let i = 0; i < 3; i++) {
      expect((await call("POST", "/api/auth/forgot-password", { email }, { ip })).status).toBe(200);
    }
    expectLimited(await call("POST", "/api/auth/forgot-password", { email }, { ip }));
    expect((await call("POST", "/api/auth/forgot-password", { email })).status).toBe(200);
  });
});

describe("POST /api/invitations/accept signed out", () => {
  it("counts against the login limit, so an invitation is no way around it", async () => {
    const [owner, victim] = await Promise.all([registerUser(), registerUser()]);
    const team = await createTeam(owner);
    const inv = await invite(owner, team.id, victim.user.email);
    const ip = freshIp();
    const guess = (password: string) =>
      call(
        "POST",
        "/api/invitations/accept",
        { token: inv.token, email: victim.user.email, name: "Victim", password },
        { ip },
      );
    for (let i = 0; i < 5; i++) expect((await guess(`guess number ${i}`)).status).toBe(401);
    expectLimited(await guess(PASSWORD));

    // Logins from the same IP share the budget.
    expectLimited(await loginFrom(ip, victim.user.email, PASSWORD));
    // Signed-in acceptance is not limited.
    const signedIn = await call(
      "POST",
      "/api/invitations/accept",
      { token: inv.token },
      { ip, token: victim.token },
    );
    expect(signedIn.status).toBe(200);
  });
});

/** Moves the account's lockout into the past, as if its Retry-After had been waited out. */
const waitOutLockout = (email: string) =>
  runInDurableObject(
    env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`login-account:${email.toLowerCase()}`)),
    async (_instance, state) => {
      const backoff = await state.storage.get<{ failures: number; lockedUntil: number }>("backoff");
      if (backoff) await state.storage.put("backoff", { ...backoff, lockedUntil: Date.now() - 1 });
    },
  );

describe("POST /api/auth/login: failures per account, with backoff (attacker: a botnet guessing one password)", () => {
  it("locks the account after 10 failures from 10 IPs, doubles the lockout, and a success resets it", async () => {
    const [victim, bystander] = await Promise.all([registerUser(), registerUser()]);
    const email = victim.user.email;
    for (let i = 0; i < 10; i++) expect((await loginFrom(freshIp(), email)).status).toBe(401);

    // Locked for every IP, the right password included, for about a minute; other accounts are not.
    const locked = await loginFrom(freshIp(), email, PASSWORD);
    expectLimited(locked);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(50);
    expect((await loginFrom(freshIp(), bystander.user.email, PASSWORD)).status).toBe(200);
    // The victim's sessions keep working meanwhile.
    expect((await call("GET", "/api/auth/user", undefined, { token: victim.token })).status).toBe(200);

    // One more failure once the lockout is over doubles it.
    await waitOutLockout(email);
    expect((await loginFrom(freshIp(), email)).status).toBe(401);
    const doubled = await loginFrom(freshIp(), email, PASSWORD);
    expect(doubled.status).toBe(429);
    expect(Number(doubled.headers.get("retry-after"))).toBeGreaterThan(110);
    expect(Number(doubled.headers.get("retry-after"))).toBeLessThanOrEqual(120);

    // The right password after the wait signs in and clears the count: 10 failures are free again.
    await waitOutLockout(email);
    expect((await loginFrom(freshIp(), email, PASSWORD)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await loginFrom(freshIp(), email)).status).toBe(401);
    expectLimited(await loginFrom(freshIp(), email));
  });

  it("lets no more than 10 guesses of a concurrent burst from many IPs through", async () => {
    const victim = await registerUser();
    const replies = await Promise.all(
      Array.from({ length: 30 }, () => loginFrom(freshIp(), victim.user.email)),
    );
    expect(replies.filter((r) => r.status === 401)).toHaveLength(10);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(20);
  });

  it("caps the lockout at 15 minutes, and counts unknown emails the same way", async () => {
    const email = uniqueEmail("nobody");
    for (let i = 0; i < 10; i++) expect((await loginFrom(freshIp(), email)).status).toBe(401);
    for (let i = 0; i < 6; i++) {
      await waitOutLockout(email);
      expect((await loginFrom(freshIp(), email)).status).toBe(401);
    }
    const capped = await loginFrom(freshIp(), email);
    expect(capped.status).toBe(429);
    expect(Number(capped.headers.get("retry-after"))).toBe(900);
  });

  it("counts signed-out invitation acceptance against the account too", async () => {
    const [owner, victim] = await Promise.all([registerUser(), registerUser()]);
    const team = await createTeam(owner);
    const inv = await invite(owner, team.id, victim.user.email);
    const body = { token: inv.token, email: victim.user.email, name: "V", password: "wrong password" };
    for (let i = 0; i < 10; i++) {
      expect((await call("POST", "/api/invitations/accept", body, { ip: freshIp() })).status).toBe(401);
    }
    expectLimited(await loginFrom(freshIp(), victim.user.email, PASSWORD));
  });
});
