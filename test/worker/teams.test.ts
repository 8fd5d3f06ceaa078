import { describe, expect, it } from "vitest";
import { call, registerUser, sharedUser, uniqueName } from "./support/client";
import { insertPod } from "./support/db";
import { activeTeamOf, createTeam, teamFixture } from "./support/teams";

const TEAM_KEYS = [
  "account_type",
  "created_at",
  "id",
  "name",
  "owner_id",
  "role",
  "slug",
  "trust_tier",
  "updated_at",
];

/** "Acme a1b2c3d47" → "acme-a1b2c3d47" */
const slugOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, "-");

describe("POST /api/teams", () => {
  it("answers 201 with the team; the caller is its owner; the slug derives from the name", async () => {
    const u = await registerUser();
    const name = uniqueName("Acme Inc.");
    const res = await call("POST", "/api/teams", { name }, { token: u.token });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(TEAM_KEYS);
    expect(res.body).toMatchObject({
      name,
      slug: slugOf(name).replace(/-$/, ""),
      owner_id: u.user.id,
      account_type: "team",
      role: "owner",
    });
    expect(res.body.id).toMatch(/^team_/);

    const members = await call("GET", `/api/teams/${res.body.id}/members`, undefined, { token: u.token });
    expect(members.body).toEqual([expect.objectContaining({ user_id: u.user.id, role: "owner" })]);
    // Creating a team does not switch to it.
    expect(await activeTeamOf(u)).toBe(u.user.active_team_id);
  });

  it("gives two teams of the same name different slugs", async () => {
    const [a, b] = await Promise.all([registerUser(), registerUser()]);
    const first = await createTeam(a, "Acme Inc");
    const second = await createTeam(b, "Acme Inc");
    const third = await createTeam(a, "Acme Inc");
    expect(first.slug).toMatch(/^acme-inc(-\d+)?$/);
    expect(second.slug).toMatch(/^acme-inc(-\d+)?$/);
    expect(new Set([first.slug, second.slug, third.slug]).size).toBe(3);
  });

  it("gives concurrently created teams of the same name different slugs", async () => {
    const u = await registerUser();
    const name = uniqueName("Race");
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => call("POST", "/api/teams", { name }, { token: u.token })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(replies.map((r) => r.body.slug)).size).toBe(8);
    for (const r of replies) expect(r.body.slug).toMatch(new RegExp(`^${slugOf(name)}(-[0-9a-z]+)?$`));
  });

  it("registers people of the same name concurrently (their personal teams' slugs differ)", async () => {
    const name = uniqueName("Twin");
    const users = await Promise.all(Array.from({ length: 6 }, () => registerUser(name)));
    const slugs = await Promise.all(
      users.map(async (u) => (await call("GET", "/api/teams", undefined, { token: u.token })).body[0].slug),
    );
    expect(new Set(slugs).size).toBe(6);
  });

  it("derives a usable slug from a name without letters or digits", async () => {
    const u = await registerUser();
    const team = await createTeam(u, "!!!");
    expect(team.slug).toMatch(/^team(-\d+)?$/);
  });

  it.each([
    ["a missing name", {}],
    ["an empty name", { name: "" }],
    ["a blank name", { name: "   " }],
    ["a 101-character name", { name: "n".repeat(101) }],
    ["a number", { name: 42 }],
  ])("answers 400 naming the field for %s", async (_, body) => {
    const u = await sharedUser();
    const res = await call("POST", "/api/teams", body, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("name");
  });
});

describe("GET /api/teams", () => {
  it("lists the caller's teams with the caller's role, and nobody else's", async () => {
    const { owner, member, outsider, team } = await teamFixture({ outsider: true });
    const mine = await call("GET", "/api/teams", undefined, { token: member.token });
    expect(mine.status).toBe(200);
    expect(mine.body.map((t: { id: string }) => t.id).sort()).toEqual(
      [member.user.active_team_id, team.id].sort(),
    );
    expect(mine.body.find((t: { id: string }) => t.id === team.id)).toMatchObject({
      role: "member",
      owner_id: owner.user.id,
    });
    const theirs = await call("GET", "/api/teams", undefined, { token: outsider.token });
    expect(theirs.body.map((t: { id: string }) => t.id)).not.toContain(team.id);
  });
});

describe("POST /api/teams/switch", () => {
  it("makes a team active and answers the updated user", async () => {
    const { member, team } = await teamFixture();
    const res = await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: member.user.id, email: member.user.email, active_team_id: team.id });
    expect(await activeTeamOf(member)).toBe(team.id);
  });

  it("answers 403 for a team the caller is not in, and for an unknown team", async () => {
    const { outsider, team } = await teamFixture({ outsider: true });
    for (const teamId of [team.id, "team_doesnotexist"]) {
      const res = await call("POST", "/api/teams/switch", { team_id: teamId }, { token: outsider.token });
      expect(res.status).toBe(403);
      expect(res.body.error).toEqual(expect.any(String));
    }
    expect(await activeTeamOf(outsider)).toBe(outsider.user.active_team_id);
  });

  it("answers 400 naming a missing team_id", async () => {
    const u = await registerUser();
    const res = await call("POST", "/api/teams/switch", {}, { token: u.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("team_id");
  });
});

describe("GET /api/teams/{id}", () => {
  it("answers the team to its members", async () => {
    const { owner, member, team } = await teamFixture();
    const asOwner = await call("GET", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect(asOwner.status).toBe(200);
    expect(asOwner.body).toMatchObject({ id: team.id, name: team.name, slug: team.slug, role: "owner" });
    const asMember = await call("GET", `/api/teams/${team.id}`, undefined, { token: member.token });
    expect(asMember.status).toBe(200);
    expect(asMember.body.role).toBe("member");
  });

  it("answers 404 to a non-member and for an unknown id", async () => {
    const { outsider, team } = await teamFixture({ outsider: true });
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: outsider.token })).status).toBe(
      404,
    );
    expect((await call("GET", "/api/teams/team_nope", undefined, { token: outsider.token })).status).toBe(
      404,
    );
  });
});

describe("PUT /api/teams/{id}", () => {
  it("renames the team and derives the slug again (owner)", async () => {
    const { owner, team } = await teamFixture();
    const name = uniqueName("Renamed Co");
    const res = await call("PUT", `/api/teams/${team.id}`, { name }, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: team.id, name, slug: slugOf(name) });
    expect(res.body.updated_at >= res.body.created_at).toBe(true);
    const read = await call("GET", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect(read.body.slug).toBe(slugOf(name));
  });

  it("gives teams renamed to one name at the same moment different slugs", async () => {
    const u = await registerUser();
    const teams = await Promise.all([createTeam(u), createTeam(u), createTeam(u), createTeam(u)]);
    const name = uniqueName("Same Name");
    const replies = await Promise.all(
      teams.map((t) => call("PUT", `/api/teams/${t.id}`, { name }, { token: u.token })),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(replies.map((r) => r.body.slug)).size).toBe(4);
  });

  it("keeps the slug when the name does not change", async () => {
    const { owner, team } = await teamFixture();
    const res = await call("PUT", `/api/teams/${team.id}`, { name: team.name }, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body.slug).toBe(team.slug);
  });

  it("answers 403 to a member and 404 to a non-member", async () => {
    const { member, outsider, team } = await teamFixture({ outsider: true });
    const asMember = await call(
      "PUT",
      `/api/teams/${team.id}`,
      { name: "Mine now" },
      { token: member.token },
    );
    expect(asMember.status).toBe(403);
    const asOutsider = await call(
      "PUT",
      `/api/teams/${team.id}`,
      { name: "Mine now" },
      { token: outsider.token },
    );
    expect(asOutsider.status).toBe(404);
    const unchanged = await call("GET", `/api/teams/${team.id}`, undefined, { token: member.token });
    expect(unchanged.body.name).toBe(team.name);
  });

  it("answers 400 for an invalid name", async () => {
    const { owner, team } = await teamFixture();
    const res = await call("PUT", `/api/teams/${team.id}`, { name: "x".repeat(101) }, { token: owner.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("name");
  });
});

describe("DELETE /api/teams/{id}", () => {
  it("deletes the team (owner); members whose active team it was go back to their personal team", async () => {
    const { owner, member, team } = await teamFixture();
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: member.token });
    const res = await call("DELETE", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: owner.token })).status).toBe(404);
    expect(await activeTeamOf(member)).toBe(member.user.active_team_id);
    const teams = await call("GET", "/api/teams", undefined, { token: member.token });
    expect(teams.body.map((t: { id: string }) => t.id)).toEqual([member.user.active_team_id]);
  });

  it("answers 403 to a member and 404 to a non-member", async () => {
    const { member, outsider, owner, team } = await teamFixture({ outsider: true });
    expect((await call("DELETE", `/api/teams/${team.id}`, undefined, { token: member.token })).status).toBe(
      403,
    );
    expect((await call("DELETE", `/api/teams/${team.id}`, undefined, { token: outsider.token })).status).toBe(
      404,
    );
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: owner.token })).status).toBe(200);
  });

  it("answers 409 naming the count while the team owns pods", async () => {
    const { owner, team } = await teamFixture();
    await insertPod(team.id);
    await insertPod(team.id, "stopped");
    const res = await call("DELETE", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.stringMatching(/\b2 pods\b/) });
    expect((await call("GET", `/api/teams/${team.id}`, undefined, { token: owner.token })).status).toBe(200);
  });

  it("does not count deleted pods", async () => {
    const { owner, team } = await teamFixture();
    await insertPod(team.id, "deleted");
    const res = await call("DELETE", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect(res.status).toBe(200);
  });

  it("answers 409 for the personal team", async () => {
    const u = await registerUser();
    const res = await call("DELETE", `/api/teams/${u.user.active_team_id}`, undefined, { token: u.token });
    expect(res.status).toBe(409);
    expect(res.body.error).toEqual(expect.any(String));
    expect(await activeTeamOf(u)).toBe(u.user.active_team_id);
  });

  it("takes the team's API tokens with it", async () => {
    const { owner, team } = await teamFixture();
    await call("POST", "/api/teams/switch", { team_id: team.id }, { token: owner.token });
    const created = await call("POST", "/api/api-tokens", { name: "ci" }, { token: owner.token });
    expect(created.body.team_id).toBe(team.id);
    await call("DELETE", `/api/teams/${team.id}`, undefined, { token: owner.token });
    expect((await call("GET", "/api/auth/user", undefined, { token: created.body.token })).status).toBe(401);
  });
});
