import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { siteZip } from "../support/zip";
import { insertHost, insertPod, podRecord } from "./support/agent";
import { call, registerUser, type TestUser, uniqueEmail } from "./support/client";
import { documentedOperations, type Operation, sampleOf } from "./support/openapi";
import { addMember, createTeam, invite, type TestTeam } from "./support/teams";

/**
 * Two teams side by side: Alice's (with Bob as a member) and Eve's. Whatever Eve does, she neither
 * sees nor changes anything of Alice's team: a team she is not in is "not found" (404); a token that
 * is not hers is 403, as the spec says for API tokens.
 */
let alice: TestUser;
let bob: TestUser;
let eve: TestUser;
let team: TestTeam;
let invitation: { id: string; token: string };
let aliceToken: { id: string; token: string };

beforeAll(async () => {
  [alice, bob, eve] = await Promise.all([registerUser("Alice"), registerUser("Bob"), registerUser("Eve")]);
  team = await createTeam(alice);
  await addMember(alice, team.id, bob);
  invitation = await invite(alice, team.id, uniqueEmail("pending"));
  await call("POST", "/api/teams/switch", { team_id: team.id }, { token: alice.token });
  aliceToken = (await call("POST", "/api/api-tokens", { name: "alice ci" }, { token: alice.token })).body;
});

const as = (user: TestUser) => ({ token: user.token });

describe("another team's resources", () => {
  it("are invisible to a non-member: 404 for the team, its members and its invitations", async () => {
    for (const path of [
      `/api/teams/${team.id}`,
      `/api/teams/${team.id}/members`,
      `/api/teams/${team.id}/members/details`,
      `/api/teams/${team.id}/invitations`,
    ]) {
      const res = await call("GET", path, undefined, as(eve));
      expect(res.status, path).toBe(404);
      expect(JSON.stringify(res.body), path).not.toContain(alice.user.email);
    }
    const teams = await call("GET", "/api/teams", undefined, as(eve));
    expect(teams.body.map((t: { id: string }) => t.id)).not.toContain(team.id);
  });

  it("cannot be changed by a non-member", async () => {
    const attempts: [string, string, unknown][] = [
      ["PUT", `/api/teams/${team.id}`, { name: "Owned by Eve" }],
      ["DELETE", `/api/teams/${team.id}`, undefined],
      ["POST", `/api/teams/${team.id}/members`, { email: eve.user.email, role: "member" }],
      ["DELETE", `/api/teams/${team.id}/members/${bob.user.id}`, undefined],
      ["POST", `/api/teams/${team.id}/invitations`, { email: uniqueEmail(), role: "member" }],
      ["DELETE", `/api/teams/${team.id}/invitations/${invitation.id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(method, path, body, as(eve));
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await call("POST", "/api/teams/switch", { team_id: team.id }, as(eve))).status).toBe(403);

    const read = await call("GET", `/api/teams/${team.id}`, undefined, as(alice));
    expect(read.body.name).toBe(team.name);
    const members = await call("GET", `/api/teams/${team.id}/members`, undefined, as(alice));
    expect(members.body.map((m: { user_id: string }) => m.user_id).sort()).toEqual(
      [alice.user.id, bob.user.id].sort(),
    );
    expect((await call("GET", `/api/invitations/${invitation.token}`)).status).toBe(200);
  });

  it("Eve's own team ids do not open Alice's team's sub-resources", async () => {
    const eveTeam = eve.user.active_team_id;
    // Alice's invitation under Eve's team id, Bob's membership under Eve's team id: nothing there.
    const inv = await call(
      "DELETE",
      `/api/teams/${eveTeam}/invitations/${invitation.id}`,
      undefined,
      as(eve),
    );
    expect(inv.status).toBe(404);
    const member = await call("DELETE", `/api/teams/${eveTeam}/members/${bob.user.id}`, undefined, as(eve));
    expect(member.status).toBe(404);
    expect((await call("GET", `/api/invitations/${invitation.token}`)).status).toBe(200);
  });

  it("API tokens: another user's are neither listed nor revocable (403)", async () => {
    const eveList = await call("GET", "/api/api-tokens", undefined, as(eve));
    expect(eveList.body).toEqual([]);
    const bobList = await call("GET", "/api/api-tokens", undefined, as(bob));
    expect(bobList.body).toEqual([]);
    for (const user of [eve, bob]) {
      const res = await call("DELETE", `/api/api-tokens/${aliceToken.id}`, undefined, as(user));
      expect(res.status).toBe(403);
    }
    expect((await call("GET", "/api/auth/user", undefined, { token: aliceToken.token })).status).toBe(200);
  });

  it("a member sees the team but cannot run owner-only operations (403)", async () => {
    const attempts: [string, string, unknown][] = [
      ["PUT", `/api/teams/${team.id}`, { name: "Owned by Bob" }],
      ["DELETE", `/api/teams/${team.id}`, undefined],
      ["POST", `/api/teams/${team.id}/members`, { email: eve.user.email, role: "member" }],
      ["GET", `/api/teams/${team.id}/invitations`, undefined],
      ["POST", `/api/teams/${team.id}/invitations`, { email: uniqueEmail(), role: "member" }],
      ["DELETE", `/api/teams/${team.id}/invitations/${invitation.id}`, undefined],
      ["DELETE", `/api/teams/${team.id}/members/${alice.user.id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(method, path, body, as(bob));
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    expect((await call("GET", `/api/teams/${team.id}/members`, undefined, as(bob))).status).toBe(200);
  });

  it("an API token bound to Alice's team acts only where Alice may", async () => {
    const res = await call("GET", `/api/teams/${eve.user.active_team_id}`, undefined, {
      token: aliceToken.token,
    });
    expect(res.status).toBe(404);
  });
});

describe("another team's pod, on every pod route of /openapi.json", () => {
  /** A request the route's schemas accept, so what answers is the lookup, not the validation. */
  async function send(op: Operation, name: string, user: TestUser) {
    const concrete = op.path
      .replace("{name}", name)
      .replace(/\{([^}]+)\}/g, (_, param: string) => op.sample.path[param] ?? "x0");
    const path = `${concrete}${op.sample.query ? `?${op.sample.query}` : ""}`;
    const body = op.sample.body;
    if (!body) return call(op.method, path, undefined, as(user));
    if (body.contentType === "application/json")
      return call(op.method, path, sampleOf(body.schema), as(user));
    // multipart: every field sampled, files as small valid archives or text
    const form = new FormData();
    for (const [field, schema] of Object.entries(body.schema.properties ?? {})) {
      if (schema.format === "binary") {
        const bytes = field === "zip" ? await siteZip() : new TextEncoder().encode("hello");
        form.append(field, new File([bytes], field === "zip" ? "site.zip" : "hello.txt"));
      } else form.append(field, String(sampleOf(schema)));
    }
    const res = await exports.default.fetch(
      new Request(`http://localhost${path}`, {
        method: op.method,
        headers: { authorization: `Bearer ${user.token}` },
        body: form,
      }),
    );
    return { status: res.status, body: (await res.json()) as { error?: string } };
  }

  it("is 404 {error} for every pod route, exactly as for a pod that does not exist", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, teamId: alice.user.active_team_id, status: "running" });
    const podRoutes = (await documentedOperations()).filter((op) => op.path.startsWith("/api/pods/{name}"));
    expect(podRoutes.length).toBeGreaterThan(30);
    const wrong: string[] = [];
    for (const op of podRoutes) {
      const theirs = await send(op, pod.name, eve);
      const missing = await send(op, "no-such-pod", eve);
      const same = theirs.body.error === missing.body.error?.replace("no-such-pod", pod.name);
      if (theirs.status !== 404 || !same)
        wrong.push(`${op.method} ${op.path}: ${theirs.status} ${theirs.body.error} / ${missing.body.error}`);
    }
    expect(wrong).toEqual([]);
    // Nothing of Alice's pod moved.
    expect(await podRecord(pod.id)).toMatchObject({ status: "running" });
  });
});
