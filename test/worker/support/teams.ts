import { expect } from "vitest";
import { call, registerUser, type TestUser, uniqueName } from "./client";

export interface TestTeam {
  id: string;
  name: string;
  slug: string;
  owner_id: string;
}

export async function createTeam(owner: TestUser, name = uniqueName("Team")): Promise<TestTeam> {
  const res = await call("POST", "/api/teams", { name }, { token: owner.token });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export async function addMember(owner: TestUser, teamId: string, member: TestUser) {
  const res = await call(
    "POST",
    `/api/teams/${teamId}/members`,
    { email: member.user.email, role: "member" },
    { token: owner.token },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export async function invite(owner: TestUser, teamId: string, email: string) {
  const res = await call(
    "POST",
    `/api/teams/${teamId}/invitations`,
    { email, role: "member" },
    { token: owner.token },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; token: string; email: string; expires_at: string };
}

interface TeamFixture {
  owner: TestUser;
  member: TestUser;
  team: TestTeam;
}

/**
 * An owner with a (non-personal) team that has one more member; with `outsider`, also someone with a
 * team of their own who is not in it. Registration is the expensive part of a test: ask only for whom you use.
 */
export async function teamFixture(): Promise<TeamFixture>;
export async function teamFixture(opts: { outsider: true }): Promise<TeamFixture & { outsider: TestUser }>;
export async function teamFixture(opts: { outsider?: boolean } = {}) {
  const [owner, member, outsider] = await Promise.all([
    registerUser("Olive Owner"),
    registerUser("Mona Member"),
    opts.outsider ? registerUser("Otto Outsider") : undefined,
  ]);
  const team = await createTeam(owner);
  await addMember(owner, team.id, member);
  return { owner, member, team, ...(outsider ? { outsider } : {}) };
}

export const activeTeamOf = async (user: TestUser) =>
  (await call("GET", "/api/auth/user", undefined, { token: user.token })).body.active_team_id as string;
