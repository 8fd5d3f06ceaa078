import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { callHost, hostAgentStub } from "../../worker/durable-objects/host-agent/client";
import { MAX_CALLS_PER_POD } from "../../worker/durable-objects/host-agent/object";
import { TEAM_RATE_LIMITS } from "../../worker/http/rate-limit";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { call, freshIp, registerUser, type TestUser } from "./support/client";

/**
 * A tenant's fair share of a shared host: one pod's commands in progress are capped, a team's
 * expensive operations are rate limited (429 with Retry-After), clone counts as a pod creation, and
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
const bigExec = { name: "big", command: ["yes"], timeoutS: 5 };

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

  it("rate limits a team's reloads across its pods (429 with Retry-After), not another team's", async () => {
    const [user, other] = await Promise.all([registerUser(), registerUser()]);
    const { agent, pod } = await podOnline(user);
    const { limit } = TEAM_RATE_LIMITS.reload;
    for (let i = 0; i < limit; i++) {
      const res = call("POST", `/api/pods/${pod.name}/reload`, undefined, as(user));
      agent.ok(await agent.next("control:call"), {
        ok: true,
        services: ["web"],
        depsInstalled: null,
        unsupported: [],
      });
      expect((await res).status).toBe(200);
    }
    const refused = await call("POST", `/api/pods/${pod.name}/reload`, undefined, as(user));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.body.error).toMatch(/too many reload operations/);

    const theirs = await podOnline(other);
    const res = call("POST", `/api/pods/${theirs.pod.name}/reload`, undefined, as(other));
    theirs.agent.ok(await theirs.agent.next("control:call"), {
      ok: true,
      services: ["web"],
      depsInstalled: null,
      unsupported: [],
    });
    expect((await res).status).toBe(200);
  });

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

  it("keeps no large command output: 1,000 execs of 1 MiB leave the journal under 1 MiB, a replay hears 409", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const MiB = "x".repeat(1024 * 1024);
    const answering = (async () => {
      for (let i = 0; i < 1000; i++) agent.ok(await agent.next("control:call", 10_000), execResult(MiB));
    })();
    for (let i = 0; i < 1000; i++) {
      const r = await callHost(env, host.id, "pod.exec", bigExec, { idempotencyKey: `big-${i}` });
      expect(r.ok).toBe(true);
    }
    await answering;
    const size = await runInDurableObject(
      hostAgentStub(env, host.id),
      (_o, state) => state.storage.sql.databaseSize,
    );
    expect(size).toBeLessThan(1024 * 1024);

    const replay = await callHost(env, host.id, "pod.exec", bigExec, { idempotencyKey: "big-7" });
    expect(replay).toMatchObject({ ok: false, code: "conflict" });
    await agent.expectNone("control:call");
  }, 120_000);
});
