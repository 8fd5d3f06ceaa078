import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callHost, hostAgentStub } from "../../worker/services/hosts/host-client";
import { FakeAgent, hostRecord, insertHost, until } from "./support/agent";

describe("experiment", () => {
  it("hibernation", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host, []);
    const stub = hostAgentStub(env, host.id);
    await runInDurableObject(stub, (i) => { (i as any).marker = 1; });
    const y = callHost(env, host.id, "host.ping", {}, { timeoutMs: 3000 });
    agent.ok(await agent.next("control:call"), { pong: true });
    console.log(await y);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 15000));
    const m = await runInDurableObject(stub, (i) => (i as any).marker);
    console.log(Date.now() - t0, m);
    const z = callHost(env, host.id, "host.ping", {}, { timeoutMs: 3000 });
    agent.ok(await agent.next("control:call"), { pong: true });
    console.log(await z);
  }, 40_000);
});
