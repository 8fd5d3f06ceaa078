import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertHost, insertPod } from "./support/agent";
import { call, registerUser, uniqueEmail } from "./support/client";
import { activeTeamOf, addMember, createTeam, teamFixture } from "./support/teams";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MEMBER_KEYS = ["id", "joined_at", "role", "team_id", "user_id"];

describe("GET /api/teams/{id}/members and /members/details", () => {
  it("lists the members; details add name and email", async () => {
    const { owner, member, team } = await teamFixture();
    const list = await call("GET", `/api/teams/${team.id}/members`, undefined, { token: member.token });
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2);
    for (const m of list.body) {
      expect(Object.keys(m).sort()).toEqual(MEMBER_KEYS);
      expect(m.team_id).toBe(team.id);
      expect(m.joined_at).toMatch(ISO);
    }
    expect(list.body.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual(
      expect.arrayContaining([
        [owner.user.id, "owner"],
        [member.user.id, "member"],
      ]),
    );

    const details = await call("GET", `/api/teams/${team.id}/members/details`, undefined, {
      token: owner.token,
    });
    expect(details.status).toBe(200);
    expect(details.body).toHaveLength(2);
    for (const d of details.body)
      expect(Object.keys(d).sort()).toEqual([...MEMBER_KEYS, "email", "name"].sort());
    expect(details.body).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ user_id: owner.user.id, name: "Olive Owner", email: owner.user.email }),
        expect.objectContaining({ user_id: member.user.id, name: "Mona Member", email: member.user.email }),
      ]),
    );
  });

  it("answers 404 to a non-member", async () => {
    const { outsider, team } = await teamFixture({ outsider: true });
    for (const path of ["members", "members/details"]) {
      const res = await call("GET", `/api/teams/${team.id}/${path}`, undefined, { token: outsider.token });
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual(expect.any(String));
    }
  });
});

describe("POST /api/teams/{id}/members", () => {
  it("adds an existing account by email (any case) and answers 201 with the membership", async () => {
    const [owner, newcomer] = await Promise.all([registerUser(), registerUser("New Comer")]);
    const team = await createTeam(owner);
    const res = await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: newcomer.user.email.toUpperCase(), role: "member" },
      { token: owner.token },
    );
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(MEMBER_KEYS);
    expect(res.body).toMatchObject({ team_id: team.id, user_id: newcomer.user.id, role: "member" });
    const teams = await call("GET", "/api/teams", undefined, { token: newcomer.token });
    expect(teams.body.map((t: { id: string }) => t.id)).toContain(team.id);
    // Being added does not switch the newcomer's active team.
    expect(await activeTeamOf(newcomer)).toBe(newcomer.user.active_team_id);
  });

  it("defaults the role to member", async () => {
    const [owner, newcomer] = await Promise.all([registerUser(), registerUser()]);
    const team = await createTeam(owner);
    const res = await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: newcomer.user.email },
      { token: owner.token },
    );
    expect(res.status).toBe(201);
    expect(res.body.role).toBe("member");
  });

  it("answers 400 when the email is missing or invalid", async () => {
    const { owner, team } = await teamFixture();
    for (const body of [{ role: "member" }, { email: "nope", role: "member" }, { email: 7 }]) {
      const res = await call("POST", `/api/teams/${team.id}/members`, body, { token: owner.token });
      expect(res.status).toBe(400);
      expect(res.body.error).toContain("email");
    }
  });

  it("answers 400 for an unknown role", async () => {
    const { owner, outsider, team } = await teamFixture({ outsider: true });
    const res = await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: outsider.user.email, role: "admin" },
      { token: owner.token },
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("role");
  });

  it("answers 404 when no account has the email", async () => {
    const { owner, team } = await teamFixture();
    const res = await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: uniqueEmail("nobody"), role: "member" },
      { token: owner.token },
    );
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual(expect.any(String));
  });

  it("answers 409 for someone already a member, the owner included", async () => {
    const { owner, member, team } = await teamFixture();
    for (const email of [member.user.email, owner.user.email]) {
      const res = await call(
        "POST",
        `/api/teams/${team.id}/members`,
        { email, role: "member" },
        { token: owner.token },
      );
      expect(res.status).toBe(409);
      expect(res.body.error).toEqual(expect.any(String));
    }
  });

  it("answers 403 to a member and 404 to a non-member", async () => {
    const { member, outsider, team } = await teamFixture({ outsider: true });
    const third = await registerUser();
    const asMember = await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: third.user.email, role: "member" },
      { token: member.token },
    );
    expect(asMember.status).toBe(403);
    const asOutsider = await call(
      "POST",
      `/api/teams/${team.id}/members`,
      { email: outsider.user.email, role: "member" },
      { token: outsider.token },
    );
    expect(asOutsider.status).toBe(404);
    const members = await call("GET", `/api/teams/${team.id}/members`, undefined, { token: member.token });
    expect(members.body).toHaveLength(2);
  });
});

describe("DELETE /api/teams/{id}/members/{uid}", () => {
  it("the owner removes a member; the member loses access and falls back to their personal team", async () => {
    const { owner, member, team } = await teamFixture();
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    const res = await call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, {
      token: owner.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "removed" });
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: member.token })).status).toBe(404);
    expect(await activeTeamOf(member)).toBe(member.user.active_team_id);
    const members = await call("GET", `/api/teams/${team.id}/members`, undefined, { token: owner.token });
    expect(members.body.map((m: { user_id: string }) => m.user_id)).toEqual([owner.user.id]);
  });

  it("a member removes themselves", async () => {
    const { member, team } = await teamFixture();
    const res = await call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, {
      token: member.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "removed" });
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: member.token })).status).toBe(404);
  });

  it("answers 403 when anyone removes the owner, the owner included", async () => {
    const { owner, member, team } = await teamFixture();
    for (const caller of [owner, member]) {
      const res = await call("DELETE", `/api/teams/${team.id}/members/${owner.user.id}`, undefined, {
        token: caller.token,
      });
      expect(res.status).toBe(403);
      expect(res.body.error).toEqual(expect.any(String));
    }
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: owner.token })).status).toBe(200);
  });

  it("answers 403 when a member removes another member", async () => {
    const { owner, member, team } = await teamFixture();
    const other = await registerUser();
    await addMember(owner, team.id, other);
    const res = await call("DELETE", `/api/teams/${team.id}/members/${other.user.id}`, undefined, {
      token: member.token,
    });
    expect(res.status).toBe(403);
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: other.token })).status).toBe(200);
  });

  it("answers 404 for someone who is not a member, and to a non-member caller", async () => {
    const { owner, member, outsider, team } = await teamFixture({ outsider: true });
    const notMember = await call("DELETE", `/api/teams/${team.id}/members/${outsider.user.id}`, undefined, {
      token: owner.token,
    });
    expect(notMember.status).toBe(404);
    const asOutsider = await call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, {
      token: outsider.token,
    });
    expect(asOutsider.status).toBe(404);
  });

  it("stops the removed member's API tokens for that team", async () => {
    const { owner, member, team } = await teamFixture();
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    const created = await call("POST", "/api/api-tokens", { name: "ci" }, { token: member.token });
    expect(created.body.team_id).toBe(team.id);
    expect((await call("GET", "/api/auth/user", undefined, { token: created.body.token })).status).toBe(200);
    await call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, {
      token: owner.token,
    });
    expect((await call("GET", "/api/auth/user", undefined, { token: created.body.token })).status).toBe(401);
  });
});

describe("a removed member's session (attacker: the member being removed)", () => {
  it("loses the team's pods at once, even with an active team left pointing at it", async () => {
    const { owner, member, team } = await teamFixture();
    const pod = await insertPod({ hostId: (await insertHost()).id, teamId: team.id });
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    expect(
      (await call("GET", `/api/pods/${pod.name}/events`, undefined, { token: member.token })).status,
    ).toBe(200);

    await call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, {
      token: owner.token,
    });
    // Whatever left the user row on the team (a switch that won a race, an older bug), the session
    // resolves the active team with the membership: no membership, the personal team.
    await env.DB.prepare("UPDATE users SET active_team_id = ? WHERE id = ?")
      .bind(team.id, member.user.id)
      .run();
    expect(
      (await call("GET", `/api/pods/${pod.name}/events`, undefined, { token: member.token })).status,
    ).toBe(404);
    expect((await call("GET", "/api/pods", undefined, { token: member.token })).body).toMatchObject({
      pods: [],
    });
    expect(await activeTeamOf(member)).toBe(member.user.active_team_id);
  });

  it("a switch racing the removal never leaves the member on the team", async () => {
    const { owner, member, team } = await teamFixture();
    const pod = await insertPod({ hostId: (await insertHost()).id, teamId: team.id });
    const [switched, removed] = await Promise.all([
      call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token }),
      call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, { token: owner.token }),
    ]);
    expect(removed.status).toBe(200);
    expect([200, 403]).toContain(switched.status);
    // A switch after the removal changes nothing; one before it is undone by the removal.
    expect(
      (await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token })).status,
    ).toBe(403);
    const row = await env.DB.prepare("SELECT active_team_id FROM users WHERE id = ?")
      .bind(member.user.id)
      .first<{ active_team_id: string }>();
    expect(row?.active_team_id).toBe(member.user.active_team_id);
    expect(
      (await call("GET", `/api/pods/${pod.name}/events`, undefined, { token: member.token })).status,
    ).toBe(404);
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: member.token })).status).toBe(404);
  });
});
