import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { call, PASSWORD, registerUser, sessionCookie, uniqueEmail } from "./support/client";
import { expireInvitation, mailsTo, sha256Hex } from "./support/db";
import { activeTeamOf, addMember, createTeam, invite, teamFixture } from "./support/teams";

const DAY = 86_400_000;
/** The spec's Invitation record, in the creation answer and in the owner's list alike. */
const INVITATION_KEYS = ["created_at", "email", "expires_at", "id", "invited_by", "role", "team_id", "token"];

const accept = (body: unknown, opts: { token?: string; cookie?: string } = {}) =>
  call("POST", "/api/invitations/accept", body, opts);

const memberIds = async (teamId: string, token: string) =>
  (await call("GET", `/api/teams/${teamId}/members`, undefined, { token })).body.map(
    (m: { user_id: string }) => m.user_id,
  ) as string[];

describe("POST /api/teams/{id}/invitations", () => {
  it("answers 201 with the invitation and its token, valid 7 days, and mails it", async () => {
    const { owner, team } = await teamFixture();
    const email = uniqueEmail("Invitee");
    const res = await call(
      "POST",
      `/api/teams/${team.id}/invitations`,
      { email: email.toUpperCase(), role: "member" },
      { token: owner.token },
    );
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(INVITATION_KEYS);
    expect(res.body).toMatchObject({
      team_id: team.id,
      email: email.toLowerCase(),
      role: "member",
      invited_by: owner.user.id,
    });
    expect(res.body.token).toMatch(/^\S{20,}$/);
    const validFor = Date.parse(res.body.expires_at) - Date.parse(res.body.created_at);
    expect(Math.abs(validFor - 7 * DAY)).toBeLessThan(60_000);

    const mails = await mailsTo(email);
    expect(mails).toHaveLength(1);
    expect(mails[0]?.body).toContain(res.body.token);
    expect(mails[0]?.subject).toContain(team.name);
  });

  it("invites an address that has no account yet, and one that has", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    for (const email of [uniqueEmail("new"), outsider.user.email]) {
      const res = await call(
        "POST",
        `/api/teams/${team.id}/invitations`,
        { email, role: "member" },
        { token: owner.token },
      );
      expect(res.status).toBe(201);
    }
  });

  it("answers 409 for an existing member, the owner included", async () => {
    const { owner, member, team } = await teamFixture();
    for (const email of [member.user.email, owner.user.email.toUpperCase()]) {
      const res = await call(
        "POST",
        `/api/teams/${team.id}/invitations`,
        { email, role: "member" },
        { token: owner.token },
      );
      expect(res.status).toBe(409);
      expect(res.body.error).toEqual(expect.any(String));
    }
  });

  it("answers 403 to a member and 404 to a non-member", async () => {
    const { member, outsider, team } = await teamFixture({ outsider: true });
    const body = { email: uniqueEmail(), role: "member" };
    expect(
      (await call("POST", `/api/teams/${team.id}/invitations`, body, { token: member.token })).status,
    ).toBe(403);
    expect(
      (await call("POST", `/api/teams/${team.id}/invitations`, body, { token: outsider.token })).status,
    ).toBe(404);
  });

  it("answers 400 for a missing or invalid email and an unknown role", async () => {
    const { owner, team } = await teamFixture();
    for (const [body, field] of [
      [{ role: "member" }, "email"],
      [{ email: "nope", role: "member" }, "email"],
      [{ email: uniqueEmail(), role: "superuser" }, "role"],
    ] as const) {
      const res = await call("POST", `/api/teams/${team.id}/invitations`, body, { token: owner.token });
      expect(res.status).toBe(400);
      expect(res.body.error).toContain(field);
    }
  });

  it("a new invitation to the same address replaces the pending one", async () => {
    const { owner, team } = await teamFixture();
    const email = uniqueEmail();
    const first = await invite(owner, team.id, email);
    const second = await invite(owner, team.id, email);
    expect((await call("GET", `/api/invitations/${first.token}`)).status).toBe(404);
    expect((await call("GET", `/api/invitations/${second.token}`)).status).toBe(200);
  });
});

describe("GET and DELETE /api/teams/{id}/invitations", () => {
  it("lists pending invitations to the owner", async () => {
    const { owner, team } = await teamFixture();
    const a = await invite(owner, team.id, uniqueEmail());
    const b = await invite(owner, team.id, uniqueEmail());
    const res = await call("GET", `/api/teams/${team.id}/invitations`, undefined, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body.map((i: { id: string }) => i.id).sort()).toEqual([a.id, b.id].sort());
    for (const i of res.body) expect(Object.keys(i).sort()).toEqual(INVITATION_KEYS);
    // each with the token of its link, as made (the spec's Invitation has it)
    const listed = new Map(res.body.map((i: { id: string; token: string }) => [i.id, i.token]));
    expect(listed.get(a.id)).toBe(a.token);
    expect(listed.get(b.id)).toBe(b.token);
    expect((await call("GET", `/api/invitations/${listed.get(a.id)}`)).body.email).toBe(a.email);
  });

  it("lists an invitation made before tokens were kept with token null; it still works", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const old = await invite(owner, team.id, outsider.user.email);
    await env.DB.prepare("UPDATE invitations SET token_sealed = NULL WHERE id = ?").bind(old.id).run();
    const res = await call("GET", `/api/teams/${team.id}/invitations`, undefined, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([expect.objectContaining({ id: old.id, token: null })]);
    expect((await accept({ token: old.token }, { token: outsider.token })).status).toBe(200);
  });

  it("leaves expired and accepted invitations out", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const expired = await invite(owner, team.id, uniqueEmail());
    await expireInvitation(expired.id);
    const accepted = await invite(owner, team.id, outsider.user.email);
    expect((await accept({ token: accepted.token }, { token: outsider.token })).status).toBe(200);
    const res = await call("GET", `/api/teams/${team.id}/invitations`, undefined, { token: owner.token });
    expect(res.body).toEqual([]);
  });

  it("answers 403 to a member and 404 to a non-member", async () => {
    const { member, outsider, team } = await teamFixture({ outsider: true });
    const path = `/api/teams/${team.id}/invitations`;
    expect((await call("GET", path, undefined, { token: member.token })).status).toBe(403);
    expect((await call("GET", path, undefined, { token: outsider.token })).status).toBe(404);
  });

  it("deletes an invitation (owner); its token stops working", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    const res = await call("DELETE", `/api/teams/${team.id}/invitations/${inv.id}`, undefined, {
      token: owner.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect((await call("GET", `/api/invitations/${inv.token}`)).status).toBe(404);
    expect((await accept({ token: inv.token }, { token: outsider.token })).status).toBe(404);
    const again = await call("DELETE", `/api/teams/${team.id}/invitations/${inv.id}`, undefined, {
      token: owner.token,
    });
    expect(again.status).toBe(404);
  });

  it("answers 403 to a member and 404 to a non-member when deleting", async () => {
    const { owner, member, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, uniqueEmail());
    const path = `/api/teams/${team.id}/invitations/${inv.id}`;
    expect((await call("DELETE", path, undefined, { token: member.token })).status).toBe(403);
    expect((await call("DELETE", path, undefined, { token: outsider.token })).status).toBe(404);
    expect((await call("GET", `/api/invitations/${inv.token}`)).status).toBe(200);
  });
});

describe("invitation tokens at rest and in logs (attacker: someone reading the database or the logs)", () => {
  it("stores only the token's SHA-256, and no request log line carries the token", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const logged: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    });
    let inv: Awaited<ReturnType<typeof invite>>;
    try {
      inv = await invite(owner, team.id, outsider.user.email);
      expect((await call("GET", `/api/invitations/${inv.token}`)).status).toBe(200);
      expect((await call("GET", `/api/invitations/${inv.token}x`)).status).toBe(404);
      expect((await accept({ token: inv.token }, { token: outsider.token })).status).toBe(200);
    } finally {
      spy.mockRestore();
    }
    const requestLines = logged.filter((line) => line.includes('"path":"/api/invitations/'));
    expect(requestLines.length).toBeGreaterThanOrEqual(3);
    expect(requestLines.some((line) => line.includes('"path":"/api/invitations/[redacted]"'))).toBe(true);
    for (const line of logged) expect(line).not.toContain(inv.token);

    const { results } = await env.DB.prepare("SELECT * FROM invitations WHERE team_id = ?")
      .bind(team.id)
      .all();
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results)).not.toContain(inv.token);
    expect(results[0]?.token_hash).toBe(await sha256Hex(inv.token));
    expect(results[0]?.token_sealed).toMatch(/^v2\./);
  });

  it("a victim's sealed token copied into the attacker's own invitation in D1 does not show in the attacker's list", async () => {
    // The attacker owns a team and can write D1 (a leaked export put back): the sealed token is
    // bound to the victim's invitation row, so it opens nowhere else.
    const victim = await teamFixture();
    const attacker = await teamFixture();
    const target = await invite(victim.owner, victim.team.id, uniqueEmail());
    const own = await invite(attacker.owner, attacker.team.id, uniqueEmail());
    await env.DB.prepare(
      "UPDATE invitations SET token_sealed = (SELECT token_sealed FROM invitations WHERE id = ?) WHERE id = ?",
    )
      .bind(target.id, own.id)
      .run();
    const res = await call("GET", `/api/teams/${attacker.team.id}/invitations`, undefined, {
      token: attacker.owner.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([expect.objectContaining({ id: own.id, token: null })]);
    expect(JSON.stringify(res.body)).not.toContain(target.token);
    // the victim's own list still shows it
    const theirs = await call("GET", `/api/teams/${victim.team.id}/invitations`, undefined, {
      token: victim.owner.token,
    });
    expect(theirs.body).toEqual([expect.objectContaining({ id: target.id, token: target.token })]);
  });
});

describe("GET /api/invitations/{token} (public)", () => {
  it("describes the invitation without authentication", async () => {
    const { owner, team } = await teamFixture();
    const email = uniqueEmail();
    const inv = await invite(owner, team.id, email);
    const res = await call("GET", `/api/invitations/${inv.token}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      team_name: team.name,
      inviter_name: "Olive Owner",
      email,
      role: "member",
      expires_at: inv.expires_at,
    });
  });

  it("answers 404 for an unknown and for an expired token", async () => {
    expect((await call("GET", "/api/invitations/no-such-token")).status).toBe(404);
    const { owner, team } = await teamFixture();
    const inv = await invite(owner, team.id, uniqueEmail());
    await expireInvitation(inv.id);
    const res = await call("GET", `/api/invitations/${inv.token}`);
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual(expect.any(String));
  });
});

describe("POST /api/invitations/accept, signed in", () => {
  it("joins, makes the team active, and answers already_member when accepted again", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    const res = await accept({ token: inv.token }, { token: outsider.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "joined", team_id: team.id });
    expect(await activeTeamOf(outsider)).toBe(team.id);
    expect(await memberIds(team.id, owner.token)).toContain(outsider.user.id);

    // Switch away, accept again: nothing to join, but the team becomes active again.
    await call(
      "POST",
      "/api/teams/switch",
      { team_id: outsider.user.active_team_id },
      { token: outsider.token },
    );
    const again = await accept({ token: inv.token }, { token: outsider.token });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ status: "already_member", team_id: team.id });
    expect(await activeTeamOf(outsider)).toBe(team.id);
  });

  it("answers already_member to someone added directly after being invited", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    await addMember(owner, team.id, outsider);
    const res = await accept({ token: inv.token }, { token: outsider.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "already_member", team_id: team.id });
    expect(await activeTeamOf(outsider)).toBe(team.id);
  });

  it("lets only one account join with an invitation", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    expect((await accept({ token: inv.token }, { token: outsider.token })).body.status).toBe("joined");
    const stranger = await registerUser();
    const res = await accept({ token: inv.token }, { token: stranger.token });
    expect(res.status).toBe(404);
    expect(await memberIds(team.id, owner.token)).not.toContain(stranger.user.id);
  });

  it("leaves the invitation to the invitee when a member opens it", async () => {
    const { owner, member, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    const res = await accept({ token: inv.token }, { token: member.token });
    expect(res.body).toEqual({ status: "already_member", team_id: team.id });
    expect((await accept({ token: inv.token }, { token: outsider.token })).body.status).toBe("joined");
  });

  it("does not let a removed member back in with the old invitation", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    await accept({ token: inv.token }, { token: outsider.token });
    await call("DELETE", `/api/teams/${team.id}/members/${outsider.user.id}`, undefined, {
      token: owner.token,
    });
    expect((await accept({ token: inv.token }, { token: outsider.token })).status).toBe(404);
    expect(await memberIds(team.id, owner.token)).not.toContain(outsider.user.id);
  });

  it("answers 404 for an unknown or expired token and 400 without one", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    expect((await accept({ token: "no-such-token" }, { token: outsider.token })).status).toBe(404);
    const inv = await invite(owner, team.id, outsider.user.email);
    await expireInvitation(inv.id);
    expect((await accept({ token: inv.token }, { token: outsider.token })).status).toBe(404);
    expect(await memberIds(team.id, owner.token)).not.toContain(outsider.user.id);
    const missing = await accept({}, { token: outsider.token });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain("token");
  });
});

describe("POST /api/invitations/accept with an API token (attacker: a leaked CI token of another team)", () => {
  it("is 403 and joins nothing; the same account signed in can accept", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    const made = await call("POST", "/api/api-tokens", { name: "ci" }, { token: outsider.token });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const refused = await accept({ token: inv.token }, { token: made.body.token });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/API token acts on its own team only/);
    expect(await memberIds(team.id, owner.token)).not.toContain(outsider.user.id);
    expect((await accept({ token: inv.token }, { token: outsider.token })).status).toBe(200);
  });
});

describe("POST /api/invitations/accept, signed out", () => {
  it("registers, signs in with the session cookie, joins, and makes the team active", async () => {
    const { owner, team } = await teamFixture();
    const email = uniqueEmail("joiner");
    const inv = await invite(owner, team.id, email);
    const res = await accept({ token: inv.token, email, name: "Jo Iner", password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "joined", team_id: team.id });

    const cookie = sessionCookie(res);
    const me = await call("GET", "/api/auth/user", undefined, { cookie });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email, name: "Jo Iner", active_team_id: team.id });
    const teams = await call("GET", "/api/teams", undefined, { cookie });
    expect(
      teams.body.map((t: { account_type: string; role: string }) => [t.account_type, t.role]).sort(),
    ).toEqual([
      ["personal", "owner"],
      ["team", "member"],
    ]);
    // A real account: the password works.
    expect((await call("POST", "/api/auth/login", { email, password: PASSWORD })).status).toBe(200);
  });

  it("signs an existing account in with its password and joins", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const inv = await invite(owner, team.id, outsider.user.email);
    const wrong = await accept({
      token: inv.token,
      email: outsider.user.email,
      name: "Otto",
      password: "not the password",
    });
    expect(wrong.status).toBe(401);
    expect(await memberIds(team.id, owner.token)).not.toContain(outsider.user.id);

    const res = await accept({
      token: inv.token,
      email: outsider.user.email,
      name: "Otto",
      password: PASSWORD,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "joined", team_id: team.id });
    expect(await activeTeamOf(outsider)).toBe(team.id);
  });

  it.each(["token", "email", "name", "password"])("answers 401 when %s is missing", async (field) => {
    const { owner, team } = await teamFixture();
    const email = uniqueEmail();
    const inv = await invite(owner, team.id, email);
    const body: Record<string, string> = { token: inv.token, email, name: "Someone", password: PASSWORD };
    delete body[field];
    const res = await accept(body);
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual(expect.any(String));
    expect((await call("POST", "/api/auth/login", { email, password: PASSWORD })).status).toBe(401);
  });

  it("answers 404 for an unknown token without creating an account", async () => {
    const email = uniqueEmail();
    const res = await accept({ token: "no-such-token", email, name: "Nobody", password: PASSWORD });
    expect(res.status).toBe(404);
    expect((await call("POST", "/api/auth/login", { email, password: PASSWORD })).status).toBe(401);
  });

  it("answers 400 for an invalid password or email", async () => {
    const { owner, team } = await teamFixture();
    const inv = await invite(owner, team.id, uniqueEmail());
    const short = await accept({ token: inv.token, email: uniqueEmail(), name: "X", password: "short" });
    expect(short.status).toBe(400);
    expect(short.body.error).toContain("password");
    const bad = await accept({ token: inv.token, email: "nope", name: "X", password: PASSWORD });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("email");
  });
});

describe("invitations of a deleted team", () => {
  it("go with the team", async () => {
    const owner = await registerUser();
    const team = await createTeam(owner);
    const inv = await invite(owner, team.id, uniqueEmail());
    await call("DELETE", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect((await call("GET", `/api/invitations/${inv.token}`)).status).toBe(404);
  });
});
