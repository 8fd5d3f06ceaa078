import { introspectWorkflow, runInDurableObject } from "cloudflare:test";
import { env, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ok } from "../../shared/errors";
import { hostAgentStub } from "../../worker/durable-objects/host-agent/client";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { CREATION_DEADLINE_MS } from "../../worker/services/pods/create-outcome";
import { type PodCreateParams, PodCreateWorkflow } from "../../worker/workflows/pod-create";
import {
  FakeAgent,
  insertHost,
  insertPod,
  podEventRecords,
  podRecord,
  type TestHost,
  until,
} from "./support/agent";
import { call, registerUser, type TestUser } from "./support/client";

/**
 * Pod creation runs on the pod-create Workflow (worker/workflows/pod-create.ts): the request answers
 * 202 at once, the workflow dispatches `pod.create` to the host's object and sleeps until the agent's
 * answer arrives as an event. Every instance is looked at with the pool's workflow introspection.
 */

afterEach(() => FakeAgent.closeAll());

const as = (user: TestUser) => ({ token: user.token });
const podName = () => `w${crypto.randomUUID().slice(0, 8)}`;

async function createThroughApi(user: TestUser, host: TestHost, name = podName()) {
  const res = await call("POST", "/api/pods", { name, preset: "static", server_id: host.id }, as(user));
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.status).toBe("creating");
  return res.body as { id: string; name: string };
}

describe("the pod-create workflow", () => {
  it("ends running: one instance per pod, the host's answer as an event, progress and started events", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await createThroughApi(user, host);

    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.create", idempotencyKey: `${pod.id}:create on host` });
    agent.ok(sent, { name: pod.name, state: "running", ip: "10.0.0.5" });

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await instance?.getOutput()).toEqual({ status: "running" });
    // The step that sent the command returned at once; the answer came as the workflow's event.
    expect(await instance?.waitForStepResult({ name: "create on host (send #1)" })).toEqual({
      state: "sent",
    });
    expect(await podRecord(pod.id)).toMatchObject({ status: "running", ip: "10.0.0.5" });
    const events = await podEventRecords(pod.id);
    expect(events.map((e) => e.type)).toEqual(["created", "progress", "started"]);
    expect(events[1]?.message).toBe(`starting the pod on server ${host.name}`);
  });

  it("ends error with the host's reason in an event, never creating", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await createThroughApi(user, host);
    agent.fail(
      await agent.next("control:call"),
      "unavailable",
      "image podhost/static not present on this host",
    );

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await instance?.getOutput()).toMatchObject({ status: "error" });
    expect(await podRecord(pod.id)).toMatchObject({ status: "error" });
    const last = (await podEventRecords(pod.id)).at(-1);
    expect(last).toMatchObject({ type: "error" });
    expect(last?.message).toContain("image podhost/static not present on this host");
  });

  it("survives the agent dropping mid-create: the command is sent again on hello, under the same id and key", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const first = await FakeAgent.online(host);
    const pod = await createThroughApi(user, host);
    const sent = await first.agent.next("control:call");
    first.agent.close(1000, "agent restarting");
    await first.agent.closed;

    const second = await FakeAgent.connect(host.token);
    // The welcome comes first, then the pending command again.
    await second.hello([]);
    const again = await second.next("control:call");
    expect(again).toMatchObject({ id: sent.id, idempotencyKey: sent.idempotencyKey, op: "pod.create" });
    second.ok(again, { name: pod.name, state: "running", ip: "10.0.0.6" });
    // A late copy of the same answer (the first run finishing too) changes nothing.
    second.ok(again, { name: pod.name, state: "running", ip: "10.0.0.6" });

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await podRecord(pod.id)).toMatchObject({ status: "running", ip: "10.0.0.6" });
    expect((await podEventRecords(pod.id)).filter((e) => e.type === "started")).toHaveLength(1);
  });

  it("ends error naming the host when its agent does not come back within the return window", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
      await m.forceEventTimeout({ name: "create on host (answer #1)" });
    });
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await createThroughApi(user, host);
    await agent.next("control:call");
    agent.close();
    await agent.closed;

    const [instance] = introspector.get();
    await instance?.waitForStatus("complete");
    expect(await instance?.getOutput()).toMatchObject({ status: "error" });
    expect(await podRecord(pod.id)).toMatchObject({ status: "error" });
    const last = (await podEventRecords(pod.id)).at(-1);
    expect(last?.message).toContain(`server ${host.name} is unavailable`);
  });

  it("clone answers 201 creating and copies on the host in the workflow", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const source = await createThroughApi(user, host);
    agent.ok(await agent.next("control:call"), { name: source.name, state: "running", ip: "10.0.0.7" });
    await until(async () => (await podRecord(source.id))?.status === "running", "source running");

    const copy = podName();
    const res = await call("POST", `/api/pods/${source.name}/clone`, { new_name: copy }, as(user));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ name: copy, status: "creating" });
    const cloned = await agent.next("control:call");
    expect(cloned).toMatchObject({ op: "pod.clone", params: { source: source.name, spec: { name: copy } } });
    agent.ok(cloned, { name: copy, state: "running", ip: "10.0.0.8" });

    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    expect(await podRecord(res.body.id)).toMatchObject({ status: "running" });
    const events = (await podEventRecords(res.body.id)).map((e) => e.type);
    expect(events).toEqual(["created", "progress", "started"]);
  });
});

describe("HostAgent.dispatch", () => {
  it("runs a key once: a pending command is re-sent under its first id, a settled one answers from the journal", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const stub = hostAgentStub(env, host.id);
    const notify = { workflow: "POD_CREATE" as const, instanceId: "no-such-instance", type: "host-t-1" };
    const options = { timeoutMs: 5_000, idempotencyKey: `k-${crypto.randomUUID()}`, notify };

    expect(await stub.dispatch("pod.inspect", { name: "abc" }, options)).toEqual({ state: "sent" });
    const first = await agent.next("control:call");
    expect(await stub.dispatch("pod.inspect", { name: "abc" }, options)).toEqual({ state: "sent" });
    const second = await agent.next("control:call");
    expect(second.id).toBe(first.id);

    agent.ok(first, { name: "abc", state: "stopped", ip: null });
    await until(
      () =>
        runInDurableObject(stub, (_instance, state) =>
          state.storage.sql
            .exec(
              "SELECT 1 FROM journal WHERE idempotency_key = ? AND outcome IS NOT NULL",
              options.idempotencyKey,
            )
            .toArray()
            .at(0),
        ),
      "the outcome in the journal",
    );
    expect(await stub.dispatch("pod.inspect", { name: "abc" }, options)).toEqual({
      state: "settled",
      outcome: { ok: true, value: { name: "abc", state: "stopped", ip: null } },
    });
    await agent.expectNone("control:call");
  });

  it("answers unavailable without journaling when no agent is connected", async () => {
    const host = await insertHost();
    const notify = { workflow: "POD_CREATE" as const, instanceId: "x", type: "host-t-1" };
    const d = await hostAgentStub(env, host.id).dispatch(
      "pod.start",
      { name: "abc" },
      { timeoutMs: 5_000, idempotencyKey: "k-offline", notify },
    );
    // Never connected: the object knows no name yet and says so plainly.
    expect(d).toEqual({
      state: "unavailable",
      message: "the server's agent has not connected yet; try again shortly",
    });
  });
});

describe("the stuck-creations cron job", () => {
  it("ends a pod left creating past the deadline in error, with the reason, and leaves younger ones", async () => {
    const host = await insertHost();
    const old = await insertPod({ hostId: host.id, status: "creating" });
    const young = await insertPod({ hostId: host.id, status: "creating" });
    const past = new Date(Date.now() - CREATION_DEADLINE_MS - 60_000).toISOString();
    await env.DB.prepare("UPDATE pods SET updated_at = ? WHERE id = ?").bind(past, old.id).run();

    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "stuck-creations"),
    );
    expect(await podRecord(old.id)).toMatchObject({ status: "error" });
    expect((await podEventRecords(old.id)).at(-1)?.message).toBe(
      "creating the pod failed: it did not finish within 2 hours",
    );
    expect(await podRecord(young.id)).toMatchObject({ status: "creating" });
  });
});

describe("the pod-create workflow's order of steps", () => {
  /** The workflow run with a step that records each step's name and runs none (the send says the host answered). */
  async function stepsOf(params: PodCreateParams) {
    const names: string[] = [];
    const step = {
      do: async (name: string) => {
        names.push(name);
        return name.includes("(send #")
          ? { state: "settled", outcome: ok({ name: params.spec.name, state: "running", ip: "10.0.0.5" }) }
          : true;
      },
      sleep: async (name: string) => void names.push(name),
      waitForEvent: async (name: string) => {
        names.push(name);
        throw new Error("no event in this test");
      },
    } as unknown as WorkflowStep;
    // the runtime's class without its constructor, which only the runtime may call: `run` needs `env`
    const workflow = Object.create(PodCreateWorkflow.prototype, { env: { value: env } }) as PodCreateWorkflow;
    const event = { payload: params, instanceId: params.podId, timestamp: new Date() };
    const output = await workflow.run(event as WorkflowEvent<PodCreateParams>, step);
    return { names, output };
  }

  it("sends pod.create before it records the progress event: the host does not wait for that write", async () => {
    const spec = { name: "order", podId: "pod_order" } as PodCreateParams["spec"];
    const { names, output } = await stepsOf({ podId: "pod_order", hostId: "host_x", hostName: "h1", spec });
    expect(output).toEqual({ status: "running" });
    expect(names).toEqual([
      "create on host (send #1)",
      "event: progress: starting the pod on server h1",
      "event: started: pod is running",
    ]);
  });
});
