import { introspectWorkflow, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { callHost, hostAgentStub } from "../../worker/durable-objects/host-agent/client";
import { JOURNAL_RETENTION_MS, Journal } from "../../worker/durable-objects/host-agent/journal";
import {
  FakeAgent,
  insertHost,
  insertPod,
  podEventRecords,
  podRecord,
  type TestHost,
  uniquePodName,
} from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * A failure says which part failed and what (issue 28, item 1): a command its host does not finish
 * or answer in time names the server, the op and the time, marked `component: "host"`, and no reason
 * ends empty. The test plays the agent; what the real agent answers on its own timeout is shown by
 * test/agent/dispatch.test.ts.
 */

afterEach(() => FakeAgent.closeAll());

/** A reason that names the host's part and does not end on an empty detail. */
function expectHostReason(reason: string | undefined, host: TestHost) {
  expect(reason).toContain(`server ${host.name}`);
  expect(reason).toMatch(/\(host\)$/);
  expect(reason).not.toMatch(/(:|\(\))\s*\(host\)$/);
}

async function userWithPod(hostId: string) {
  const user = await registerUser();
  const pod = await insertPod({ hostId, teamId: user.user.active_team_id, status: "running" });
  return { pod, as: { token: user.token } };
}

describe("a plain verb's failure names the server, the op and the host's part", () => {
  it("a call the agent never answers: the control plane's own wait ran out", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pending = callHost(env, host.id, "pod.stop", { name: uniquePodName() }, { timeoutMs: 200 });
    await agent.next("control:call"); // taken, never answered
    const outcome = await pending;
    expect(outcome).toEqual({
      ok: false,
      code: "unavailable",
      message: `server ${host.name}'s agent did not answer pod.stop within 200 ms (host)`,
      component: "host",
    });
  });

  it("the agent's own timeout, through the API: the tenant reads the server's name before it", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { pod, as } = await userWithPod(host.id);
    const reply = call("POST", `/api/pods/${pod.name}/stop`, undefined, as);
    const sent = await agent.next("control:call");
    // what agent/connection/dispatch.ts answers when the op's timer ends it
    agent.fail(sent, "unavailable", "the agent did not finish pod.stop within 30 s (host)", "host");
    const res = await reply;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: `server ${host.name}: the agent did not finish pod.stop within 30 s (host)`,
    });
  });

  it("a blank answer (an older agent's) still says whose it is and what", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pending = callHost(env, host.id, "pod.restart", { name: uniquePodName() });
    agent.fail(await agent.next("control:call"), "internal", " ");
    const outcome = await pending;
    expect(outcome).toMatchObject({
      ok: false,
      code: "internal",
      message: `server ${host.name}'s agent failed pod.restart without a reason (host)`,
      component: "host",
    });
  });

  it("a part this side does not know (a newer agent's) is dropped, not the answer", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pending = callHost(env, host.id, "pod.stop", { name: uniquePodName() }, { timeoutMs: 5_000 });
    const sent = await agent.next("control:call");
    agent.send({
      type: "agent:result",
      id: sent.id,
      ok: false,
      error: { code: "conflict", message: "the pod's volume is busy (volume)", component: "volume" },
    });
    const started = Date.now();
    expect(await pending).toEqual({
      ok: false,
      code: "conflict",
      message: "the pod's volume is busy (volume)",
    });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("a disconnect names the server and the close code", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pending = callHost(env, host.id, "pod.stop", { name: uniquePodName() });
    await agent.next("control:call");
    agent.close(1001, "");
    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: false, code: "unavailable", component: "host" });
    if (outcome.ok) return;
    expect(outcome.message).toBe(
      `server ${host.name}'s agent disconnected (code 1001); the command's outcome is unknown (host)`,
    );
  });

  it("a command left unanswered past the journal's retention is failed naming its op and server", async () => {
    const host = await insertHost();
    await FakeAgent.online(host);
    const key = crypto.randomUUID();
    const outcome = await runInDurableObject(hostAgentStub(env, host.id), (_instance, state) => {
      const journal = new Journal(state.storage.sql);
      journal.recordCall(crypto.randomUUID(), key, "pod.delete");
      journal.prune(`server ${host.name}'s`, Date.now() + JOURNAL_RETENTION_MS + 1_000);
      return journal.byKey(key)?.outcome;
    });
    expect(outcome).toEqual({
      ok: false,
      code: "unavailable",
      message: `server ${host.name}'s agent never answered pod.delete (host)`,
      component: "host",
    });
  });
});

describe("a workflow step's failure names the server, the op and the host's part", () => {
  async function createThroughApi(host: TestHost) {
    const user = await registerUser();
    const name = `w${crypto.randomUUID().slice(0, 8)}`;
    const res = await call(
      "POST",
      "/api/pods",
      { name, preset: "static", server_id: host.id },
      { token: user.token },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body as { id: string; name: string };
  }

  it("the agent's own timeout ends the pod `error` with the server named", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pod = await createThroughApi(host);
    const sent = await agent.next("control:call");
    expect(sent.op).toBe("pod.create");
    agent.fail(sent, "unavailable", "the agent did not finish pod.create within 120 s (host)", "host");

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await podRecord(pod.id)).toMatchObject({ status: "error" });
    const last = (await podEventRecords(pod.id)).at(-1);
    expect(last).toMatchObject({
      type: "error",
      message: `creating the pod failed: server ${host.name}: the agent did not finish pod.create within 120 s (host)`,
    });
    expectHostReason(last?.message, host);
  });

  it("a host that takes the command and never answers: the workflow's own wait names it", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
      for (let n = 1; n <= 20; n++) await m.forceEventTimeout({ name: `create on host (answer #${n})` });
    });
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pod = await createThroughApi(host);
    await agent.next("control:call"); // taken, never answered (each resend likewise)

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await podRecord(pod.id)).toMatchObject({ status: "error" });
    const last = (await podEventRecords(pod.id)).at(-1);
    expect(last?.message).toBe(
      `creating the pod failed: server ${host.name}'s agent never answered pod.create, sent 20 times with 150 s each (host)`,
    );
    expectHostReason(last?.message, host);
  });

  it("a blank answer to a workflow's command still ends with a reason", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const pod = await createThroughApi(host);
    agent.fail(await agent.next("control:call"), "internal", "");

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await instance?.getOutput()).toEqual({
      status: "error",
      reason: `server ${host.name}'s agent failed pod.create without a reason (host)`,
    });
    expectHostReason((await podEventRecords(pod.id)).at(-1)?.message, host);
  });
});
