import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { FakeAgent, insertHost, insertPod } from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * The command runner's Worker side (the command itself: test/e2e/inside.test.ts): what an exec costs
 * the control plane beyond the host's round trip. Its journal row: test/worker/host-agent.test.ts.
 */

afterEach(() => FakeAgent.closeAll());

const TTL_MS = 5_000; // worker/lib/isolate-cache.ts

describe("POST /api/pods/{name}/exec", () => {
  it("keeps the isolate's cached reads (a command changes no credential); other changes still drop them", async (t) => {
    const user = await registerUser();
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "running" });
    const as = { token: user.token };
    const exec = async () => {
      const reply = call("POST", `/api/pods/${pod.name}/exec`, { command: ["true"] }, as);
      agent.ok(await agent.next("control:call"), {
        exitCode: 0,
        stdout: "",
        stderr: "",
        durationMs: 1,
        timedOut: false,
      });
      return reply;
    };

    // The credential is read once and cached; then its session goes behind the Worker's back (no
    // API change, so no isolate learns of it): only a cached read still knows the caller.
    const cachedAt = Date.now();
    expect((await call("GET", "/api/auth/user", undefined, as)).status).toBe(200);
    await env.DB.prepare("DELETE FROM sessions WHERE user_id = ?").bind(user.user.id).run();
    expect((await exec()).status).toBe(200);
    const after = await call("GET", "/api/auth/user", undefined, as);
    // the cache's own expiry would say nothing about the rule (a very slow machine)
    if (Date.now() - cachedAt > TTL_MS - 500) return t.skip();
    expect(after.status).toBe(200);

    // Any other successful change (a stop) drops them, and the deleted session is refused at once.
    const stop = call("POST", `/api/pods/${pod.name}/stop`, undefined, as);
    agent.ok(await agent.next("control:call"), { name: pod.name, state: "stopped", ip: null });
    expect((await stop).status).toBe(200);
    expect((await call("GET", "/api/auth/user", undefined, as)).status).toBe(401);
  });
});
