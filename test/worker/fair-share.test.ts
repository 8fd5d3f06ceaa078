import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { callHost, hostAgentStub } from "../../worker/durable-objects/host-agent/client";
import { MAX_CALLS_PER_POD, MAX_CALLS_PER_TEAM } from "../../worker/durable-objects/host-agent/object";
import { FAIR_SHARE_LIMITS, fairShareLimiter, podCap } from "../../worker/http/rate-limit";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { call, freshIp, registerUser, type TestUser } from "./support/client";

/**
 * A tenant's fair share of a shared host: one pod's and one team's commands in progress are capped,
 * expensive operations are rate limited per pod and per team (429 with Retry-After), clone counts as a pod creation, and
 * the HostAgent's journal keeps no large command output, so its storage stays bounded.
 */

afterEach(() => FakeAgent.closeAll());

const as = (user: TestUser, ip?: string) => ({ token: user.token, ...(ip ? { ip } : {}) });

async function podOnline(user: TestUser) {
  const host = await insertHost();
  const { agent } = await FakeAgent.online(host);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
  return { host, agent, pod };
}

const execResult = (stdout: string) => ({ exitCode: 0, stdout, stderr: "", durationMs: 1, timedOut: false });
// a reload is journaled (an exec is not: its outcome is never replayed) and may answer with much output
const failedReload = (depsOutput: string) => ({ ok: false as const, depsOutput, exitCode: 1 });
const bigReload = { name: "big", preset: "nodejs" as const };

describe("fair share of a host", () => {
  it(`one pod has at most ${MAX_CALLS_PER_POD} commands in progress; the next is 429 with Retry-After`, async () => {
    const user = await registerUser();
    const { agent, pod } = await podOnline(user);
    const exec = () => call("POST", `/api/pods/${pod.name}/exec`, { command: ["sleep", "9"] }, as(user));
    const inFlight = Array.from({ length: MAX_CALLS_PER_POD }, exec);
    const calls = [];
    for (let i = 0; i < MAX_CALLS_PER_POD; i++) calls.push(await agent.next("control:call"));

    const refused = await exec();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body.error).toContain(`pod ${pod.name} already has ${MAX_CALLS_PER_POD} operations`);

    for (const c of calls) agent.ok(c, execResult("done"));
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual(Array(MAX_CALLS_PER_POD).fill(200));
    // Room again once they are answered.
    const again = exec();
    agent.ok(await agent.next("control:call"), execResult("again"));
    expect((await again).status).toBe(200);
  });

  it("counts exec's fair share beside the pod's lookup: a pod's spent cap is 429 before the host is asked, its team's other pods still run", async () => {
    const user = await registerUser();
    const { host, agent, pod } = await podOnline(user);
    const other = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
    const { perPod, perTeam, windowMs } = FAIR_SHARE_LIMITS.exec;
    const limiter = fairShareLimiter(env, "exec", user.user.active_team_id);
    const caps = [
      { key: podCap(pod.name), limit: perPod },
      { key: "team", limit: perTeam },
    ];
    for (let i = 0; i < perPod; i++) expect((await limiter.hitEach(caps, windowMs)).allowed).toBe(true);
    const exec = (name: string, body: Record<string, unknown> = {}) =>
      call("POST", `/api/pods/${name}/exec`, { command: ["true"], ...body }, as(user));
    for (const refused of [await exec(pod.name), await exec(pod.name, { workdir: "/etc" })]) {
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(refused.body.error).toContain(`at most ${perPod} per 1 minute(s) per pod`);
    }
    const ran = exec(other.name);
    const sent = await agent.next("control:call");
    // the first command the host hears of is the other pod's: the refused ones never left the Worker
    expect(sent.params).toMatchObject({ name: other.name });
    agent.ok(sent, execResult("ran"));
    expect(await ran).toMatchObject({ status: 200, body: { stdout: "ran" } });
  });

  it(`one team's pods together have at most ${MAX_CALLS_PER_TEAM} commands in progress on a host; another team's still run`, async () => {
    const [user, other] = await Promise.all([registerUser(), registerUser()]);
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pod = () => insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
    const pods = await Promise.all(Array.from({ length: MAX_CALLS_PER_TEAM / MAX_CALLS_PER_POD + 1 }, pod));
    const exec = (name: string, who = user) =>
      call("POST", `/api/pods/${name}/exec`, { command: ["sleep", "9"] }, as(who));
    const inFlight = pods
      .slice(0, -1)
      .flatMap((p) => Array.from({ length: MAX_CALLS_PER_POD }, () => exec(p.name)));
    const calls = [];
    for (let i = 0; i < MAX_CALLS_PER_TEAM; i++) calls.push(await agent.next("control:call"));

    const refused = await exec(pods[pods.length - 1]?.name ?? "");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body.error).toContain(
      `your team already has ${MAX_CALLS_PER_TEAM} operations in progress`,
    );

    const theirs = await insertPod({ hostId: host.id, teamId: other.user.active_team_id, status: "running" });
    const theirExec = exec(theirs.name, other);
    agent.ok(await agent.next("control:call"), execResult("theirs"));
    expect((await theirExec).status).toBe(200);

    for (const c of calls) agent.ok(c, execResult("done"));
    expect((await Promise.all(inFlight)).every((r) => r.status === 200)).toBe(true);
  });

  it("rate limits reloads per pod, then per team across its pods (429 with Retry-After), not another team's", async () => {
    const [user, other] = await Promise.all([registerUser(), registerUser()]);
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { perPod, perTeam } = FAIR_SHARE_LIMITS.reload;
    const pod = (teamId: string) => insertPod({ hostId: host.id, teamId, status: "running" });
    const reloaded = { ok: true, services: ["web"], depsInstalled: null, unsupported: [] };
    const post = (name: string, who = user) => call("POST", `/api/pods/${name}/reload`, undefined, as(who));
    /** a reload that gets through: the host is asked, and answers */
    const reload = async (name: string, who = user) => {
      const res = post(name, who);
      agent.ok(await agent.next("control:call"), reloaded);
      return res;
    };
    const pods = await Promise.all(
      Array.from({ length: perTeam / perPod + 1 }, () => pod(user.user.active_team_id)),
    );
    const first = pods[0]?.name ?? "";
    for (let i = 0; i < perPod; i++) expect((await reload(first)).status).toBe(200);
    const podCapped = await post(first);
    expect(podCapped.status).toBe(429);
    expect(Number(podCapped.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(podCapped.body.error).toMatch(/too many reload operations: at most 10 per 10 minute\(s\) per pod/);

    for (const p of pods.slice(1, -1))
      for (let i = 0; i < perPod; i++) expect((await reload(p.name)).status).toBe(200);
    const teamCapped = await post(pods[pods.length - 1]?.name ?? "");
    expect(teamCapped.status).toBe(429);
    expect(teamCapped.body.error).toMatch(/at most 20 per 10 minute\(s\) per team/);

    const theirs = await pod(other.user.active_team_id);
    expect((await reload(theirs.name, other)).status).toBe(200);
  });

  it("counts a team's caps in one call to its limiter: the first spent one refuses, and nothing is counted then", async () => {
    const limiter = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`fair:test:${crypto.randomUUID()}`));
    const caps = (pod: string, team = 3) => [
      { key: `pod:${pod}`, limit: 2 },
      { key: "team", limit: team },
    ];
    expect(await limiter.hitEach(caps("a"), 60_000)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.hitEach(caps("a"), 60_000)).toMatchObject({ allowed: true, remaining: 0 });
    // a's own cap is spent: refused, and not counted on the team (which has one place left)
    expect(await limiter.hitEach(caps("a"), 60_000)).toMatchObject({ allowed: false, refused: 0 });
    expect(await limiter.hitEach(caps("b"), 60_000)).toMatchObject({ allowed: true, remaining: 0 });
    const teamSpent = await limiter.hitEach(caps("c"), 60_000);
    expect(teamSpent).toMatchObject({ allowed: false, refused: 1 });
    expect(teamSpent.retryAfter).toBeGreaterThan(0);
    // c's refused request was not counted on c: under a roomier team cap it has both its places
    expect(await limiter.hitEach(caps("c", 5), 60_000)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.hitEach(caps("c", 5), 60_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.hitEach(caps("c", 9), 60_000)).toMatchObject({ allowed: false, refused: 0 });
  });

  it("rate limits what reloads the shared ingress (feedback settings, domain verification, reload) per pod, then per team", async () => {
    const user = await registerUser();
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { perPod, perTeam } = FAIR_SHARE_LIMITS.ingress;
    const pods = await Promise.all(
      Array.from({ length: perTeam / perPod + 1 }, () =>
        insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" }),
      ),
    );
    const rotate = (name: string) =>
      call("POST", `/api/pods/${name}/feedback/settings`, { rotate: true }, as(user));
    /** a rotation that gets through: the host renders the vhost */
    const rotated = async (name: string) => {
      const res = rotate(name);
      const c = await agent.next("control:call");
      expect(c.op).toBe("pod.feedback.set");
      agent.ok(c, { rendered: true });
      return res;
    };
    const first = pods[0]?.name ?? "";
    for (let i = 0; i < perPod; i++) expect((await rotated(first)).status).toBe(200);
    // a tenant rotating in a loop: refused before the host is asked, whatever the route
    const capped = await rotate(first);
    expect(capped.status).toBe(429);
    expect(Number(capped.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(capped.body.error).toMatch(/too many ingress operations: at most 20 per 10 minute\(s\) per pod/);
    const verify = await call("POST", `/api/pods/${first}/domains/dom_x0/verify`, undefined, as(user));
    expect(verify.status).toBe(429);
    const reload = await call("POST", `/api/pods/${first}/reload`, undefined, as(user));
    expect(reload.status).toBe(429);
    await agent.expectNone("control:call");

    // the team's other pods share one budget
    for (const p of pods.slice(1, -1))
      for (let i = 0; i < perPod; i++) expect((await rotated(p.name)).status).toBe(200);
    const teamCapped = await rotate(pods[pods.length - 1]?.name ?? "");
    expect(teamCapped.status).toBe(429);
    expect(teamCapped.body.error).toMatch(/at most 60 per 10 minute\(s\) per team/);
  }, 60_000);

  it("counts clone against the pod-creation limit of the client's IP", async () => {
    const user = await registerUser();
    const ip = freshIp();
    for (let i = 0; i < 50; i++) {
      // Refused for its body, but counted: the limit is checked first.
      expect((await call("POST", "/api/pods", {}, as(user, ip))).status).toBe(400);
    }
    const clone = await call("POST", "/api/pods/whatever/clone", { new_name: "copy-of-it" }, as(user, ip));
    expect(clone.status).toBe(429);
    expect(clone.headers.get("retry-after")).toBeTruthy();
  });

  it("keeps no large command output: 1,000 failed reloads with 1 MiB of output leave the journal under 1 MiB, a replay hears 409", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const MiB = "x".repeat(1024 * 1024);
    const answering = (async () => {
      for (let i = 0; i < 1000; i++) agent.ok(await agent.next("control:call", 10_000), failedReload(MiB));
    })();
    for (let i = 0; i < 1000; i++) {
      const r = await callHost(env, host.id, "pod.reload", bigReload, { idempotencyKey: `big-${i}` });
      expect(r.ok).toBe(true);
    }
    await answering;
    const size = await runInDurableObject(
      hostAgentStub(env, host.id),
      (_o, state) => state.storage.sql.databaseSize,
    );
    expect(size).toBeLessThan(1024 * 1024);

    const replay = await callHost(env, host.id, "pod.reload", bigReload, { idempotencyKey: "big-7" });
    expect(replay).toMatchObject({ ok: false, code: "conflict" });
    await agent.expectNone("control:call");
  }, 120_000);
});
