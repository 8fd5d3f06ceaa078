import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { PodState } from "../../shared/protocol";
import { callHost, hostAgentStub } from "../../worker/durable-objects/host-agent/client";
import type { HostAgent } from "../../worker/durable-objects/host-agent/object";
import {
  dial,
  FakeAgent,
  hostRecord,
  insertHost,
  insertPod,
  podEventRecords,
  podRecord,
  uniquePodName,
  until,
} from "./support/agent";
import { call, registerUser } from "./support/client";

/**
 * The wire between the control plane and a host agent: the test plays the agent on the WebSocket the
 * Worker hands to the host's HostAgent Durable Object, and drives commands through the public API
 * or `callHost`.
 */

afterEach(() => FakeAgent.closeAll());

const running = (name: string, ip = "172.30.0.2"): PodState => ({ name, state: "running", ip });
const stopped = (name: string): PodState => ({ name, state: "stopped", ip: null });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The DO's command journal, read from its own SQLite storage. */
const journal = (hostId: string) =>
  runInDurableObject(hostAgentStub(env, hostId), (_instance, state) =>
    state.storage.sql
      .exec<{ idempotency_key: string; state: string; outcome: string | null }>(
        "SELECT idempotency_key, state, outcome FROM journal",
      )
      .toArray(),
  );

/** A registered user with a pod of their team on `hostId`, for driving commands through the API. */
async function userWithPod(hostId: string) {
  const user = await registerUser();
  const pod = await insertPod({ hostId, teamId: user.user.active_team_id, status: "running" });
  return { pod, as: { token: user.token } };
}

describe("GET /agent/connect", () => {
  it("refuses a missing, unknown or non-agent token with 401 and no upgrade", async () => {
    const host = await insertHost();
    const user = await registerUser();
    for (const token of [undefined, "hat_not-a-token-of-any-host", host.token.slice(4), user.token]) {
      const res = await dial(token);
      expect(res.status, String(token)).toBe(401);
      expect(res.webSocket).toBeNull();
      expect(await res.json()).toEqual({ error: expect.any(String) });
    }
    expect(await hostRecord(host.id)).toMatchObject({ status: "offline", last_seen_at: null });
  });

  it("answers a valid token without a WebSocket upgrade with 400", async () => {
    const host = await insertHost();
    const res = await dial(host.token, {});
    expect(res.status).toBe(400);
    expect(res.webSocket).toBeNull();
  });

  it("marks the host online on hello (agent version, last_seen_at, region available), offline on disconnect", async () => {
    // A region no other test of this file connects an agent in.
    const host = await insertHost("ap-southeast");
    const user = await registerUser();
    const availability = async () =>
      (await call("GET", "/api/regions", undefined, { token: user.token })).body.regions.find(
        (r: { slug: string }) => r.slug === "ap-southeast",
      ).available;
    expect(await availability()).toBe(false);

    const before = Date.now();
    const { agent, welcome } = await FakeAgent.online(host, [], "9.9.9-test");
    expect(welcome).toEqual({ type: "control:welcome", hostId: host.id, orphans: [] });
    const online = await hostRecord(host.id);
    expect(online).toMatchObject({ status: "online", agent_version: "9.9.9-test" });
    expect(Date.parse(online?.last_seen_at ?? "")).toBeGreaterThanOrEqual(before);
    expect(await availability()).toBe(true);

    // Heartbeats are answered and keep last_seen_at fresh, writing it at most every 30 s.
    agent.send({ type: "agent:ping", at: 42 });
    expect(await agent.next("control:pong")).toEqual({ type: "control:pong", at: 42 });
    const touched = (await hostRecord(host.id))?.last_seen_at;
    expect(Date.parse(touched ?? "")).toBeGreaterThanOrEqual(Date.parse(online?.last_seen_at ?? ""));
    agent.send({ type: "agent:ping", at: 43 });
    expect(await agent.next("control:pong")).toEqual({ type: "control:pong", at: 43 });
    expect((await hostRecord(host.id))?.last_seen_at).toBe(touched);

    agent.close();
    const offline = await until(async () => {
      const row = await hostRecord(host.id);
      return row?.status === "offline" ? row : undefined;
    }, "the host to go offline");
    expect(Date.parse(offline.last_seen_at ?? "")).toBeGreaterThanOrEqual(
      Date.parse(online?.last_seen_at ?? ""),
    );
    expect(await availability()).toBe(false);
  });

  it("closes the connection of an agent that speaks another protocol version", async () => {
    const host = await insertHost();
    const agent = await FakeAgent.connect(host.token);
    agent.send({ type: "agent:hello", protocol: 999, agentVersion: "future", inventory: [] });
    expect((await agent.closed).code).toBe(4000);
    expect((await hostRecord(host.id))?.status).toBe("offline");
  });

  it("lets a newer connection replace the old one: the old one's calls fail, new calls go to the new one", async () => {
    const host = await insertHost();
    const { agent: old } = await FakeAgent.online(host);
    const stranded = callHost(env, host.id, "host.ping", {}, { timeoutMs: 10_000 });
    await old.next("control:call");

    const { agent: fresh } = await FakeAgent.online(host);
    expect(await stranded).toMatchObject({ ok: false, code: "unavailable" });
    expect((await old.closed).code).toBe(1000);

    const ping = callHost(env, host.id, "host.ping", {}, { timeoutMs: 10_000 });
    fresh.ok(await fresh.next("control:call"), { pong: true });
    expect(await ping).toEqual({ ok: true, value: { pong: true } });
    expect((await hostRecord(host.id))?.status).toBe("online");
  });
});

describe("a replaced connection's late close", () => {
  it("fails only the calls sent on it: a call already sent on its successor is answered there", async () => {
    const host = await insertHost();
    const { agent: fresh } = await FakeAgent.online(host);
    const ping = callHost(env, host.id, "host.ping", {}, { timeoutMs: 10_000 });
    const sent = await fresh.next("control:call");
    // A socket the successor replaced whose close arrives only now (after a partition, a dead
    // socket's close can come long after the agent dialled again).
    await runInDurableObject(hostAgentStub(env, host.id), async (instance: HostAgent, state) => {
      const [, stale] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      state.acceptWebSocket(stale);
      stale.serializeAttachment({ hostId: host.id, connectedAt: 0 });
      await instance.webSocketClose(stale, 1006);
    });
    fresh.ok(sent, { pong: true });
    expect(await ping).toEqual({ ok: true, value: { pong: true } });
    expect((await hostRecord(host.id))?.status).toBe("online");
  });
});

describe("reconciliation with the agent's inventory on every (re)connect", () => {
  it("errors pods whose container vanished (with an event), follows container states, reports orphans", async () => {
    const host = await insertHost();
    const other = await insertHost();
    const vanished = await insertPod({ hostId: host.id, status: "running" });
    const halted = await insertPod({ hostId: host.id, status: "running" });
    const moved = await insertPod({ hostId: host.id, status: "running", ip: "172.30.0.2" });
    const broken = await insertPod({ hostId: host.id, status: "error" });
    const deleted = await insertPod({ hostId: host.id, status: "deleted" });
    const elsewhere = await insertPod({ hostId: other.id, status: "stopped" });
    const suspended = await insertPod({ hostId: host.id, status: "suspended" });
    const stray = uniquePodName();

    const { welcome } = await FakeAgent.online(host, [
      stopped(halted.name),
      running(moved.name, "172.30.0.9"),
      running(deleted.name), // its pod was deleted, the container was not
      running(elsewhere.name), // a same-named pod exists, but on another host
      running(stray),
      stopped(suspended.name), // a paying customer's files: never an orphan
    ]);

    expect([...welcome.orphans].sort()).toEqual([deleted.name, elsewhere.name, stray].sort());
    expect(await podRecord(vanished.id)).toMatchObject({ status: "error" });
    expect(await podEventRecords(vanished.id)).toEqual([
      {
        type: "error",
        message: expect.stringContaining("missing"),
        metadata: JSON.stringify({ source: "reconcile" }),
      },
    ]);
    expect(await podRecord(halted.id)).toMatchObject({ status: "stopped" });
    expect(await podRecord(moved.id)).toMatchObject({ status: "running", ip: "172.30.0.9" });
    // Already known to be broken: no second event.
    expect(await podRecord(broken.id)).toMatchObject({ status: "error" });
    expect(await podEventRecords(broken.id)).toEqual([]);
    // Orphans are reported, never adopted: neither pod row moves.
    expect(await podRecord(deleted.id)).toMatchObject({ status: "deleted" });
    expect(await podRecord(elsewhere.id)).toMatchObject({ status: "stopped" });
    // A suspended pod's stopped container is its own, and the pod stays suspended.
    expect(await podRecord(suspended.id)).toMatchObject({ status: "suspended" });
    expect(await podEventRecords(suspended.id)).toEqual([]);
  });

  it("runs again on every reconnect, without repeating events", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, status: "running" });

    const first = await FakeAgent.online(host, []);
    expect((await podRecord(pod.id))?.status).toBe("error");
    first.agent.close();
    await until(async () => (await hostRecord(host.id))?.status === "offline", "the host to go offline");

    const second = await FakeAgent.online(host, []);
    expect(await podEventRecords(pod.id)).toHaveLength(1);
    second.agent.close();
    await until(async () => (await hostRecord(host.id))?.status === "offline", "the host to go offline");

    // The container is back (an operator restored it): the pod follows.
    await FakeAgent.online(host, [running(pod.name)]);
    expect(await podRecord(pod.id)).toMatchObject({ status: "running" });
  });

  it("leaves a pod still being created to its create command: no container yet is not a vanished one", async () => {
    // The agent's socket flapped while the create command had not made the container yet
    // (test/chaos/control-socket-flap.test.ts): the hello's inventory does not list it.
    const host = await insertHost();
    const creating = await insertPod({ hostId: host.id, status: "creating" });
    const vanished = await insertPod({ hostId: host.id, status: "running" });
    const { welcome } = await FakeAgent.online(host, []);
    expect(welcome.orphans).toEqual([]);
    expect(await podRecord(creating.id)).toMatchObject({ status: "creating" });
    expect(await podEventRecords(creating.id)).toEqual([]);
    // a pod that had its container is still found missing
    expect(await podRecord(vanished.id)).toMatchObject({ status: "error" });
  });
});

describe("commands over the wire", () => {
  it("correlates request ids: two concurrent calls answered out of order each get their own answer", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const [a, b] = [uniquePodName(), uniquePodName()];
    const first = callHost(env, host.id, "pod.inspect", { name: a }, { timeoutMs: 10_000 });
    const second = callHost(env, host.id, "pod.inspect", { name: b }, { timeoutMs: 10_000 });

    const calls = [await agent.next("control:call"), await agent.next("control:call")];
    const byName = (name: string) => calls.find((c) => (c.params as { name: string }).name === name);
    const [callA, callB] = [byName(a), byName(b)];
    if (!callA || !callB) throw new Error("both calls should reach the agent");
    expect(callA).toMatchObject({ op: "pod.inspect", timeoutMs: 10_000 });
    expect(callA.id).not.toBe(callB.id);
    expect(callA.idempotencyKey).not.toBe(callB.idempotencyKey);

    agent.ok(callB, stopped(b));
    agent.ok(callA, running(a));
    expect(await second).toEqual({ ok: true, value: stopped(b) });
    expect(await first).toEqual({ ok: true, value: running(a) });
  });

  it("POST /api/pods/{name}/stop is pod.stop: the host's answer becomes the pod's state, with an event", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { pod, as } = await userWithPod(host.id);

    const reply = call("POST", `/api/pods/${pod.name}/stop`, undefined, as);
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.stop", params: { name: pod.name }, timeoutMs: 30_000 });
    agent.ok(sent, stopped(pod.name));
    const res = await reply;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: pod.name, status: "stopped" });
    const events = await call("GET", `/api/pods/${pod.name}/events`, undefined, as);
    expect(events.body.events).toEqual([expect.objectContaining({ type: "stopped" })]);

    // GET /api/pods/{name} is pod.inspect, with a shorter timeout.
    const read = call("GET", `/api/pods/${pod.name}`, undefined, as);
    const inspect = await agent.next("control:call");
    expect(inspect).toMatchObject({ op: "pod.inspect", params: { name: pod.name }, timeoutMs: 5_000 });
    agent.ok(inspect, running(pod.name, "172.30.0.7"));
    expect((await read).body).toMatchObject({ status: "running", ip: "172.30.0.7" });
  });

  it("maps the agent's not_found to the documented 409 for a power command", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { pod, as } = await userWithPod(host.id);
    const reply = call("POST", `/api/pods/${pod.name}/stop`, undefined, as);
    agent.fail(
      await agent.next("control:call"),
      "not_found",
      `pod ${pod.name} has no container on this host`,
    );
    const res = await reply;
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.stringContaining("no container") });
  });

  it("answers 503 {error} at once when the pod's host has no agent connected", async () => {
    const host = await insertHost();
    const { pod, as } = await userWithPod(host.id);
    for (const [method, path] of [
      ["GET", `/api/pods/${pod.name}`],
      ["POST", `/api/pods/${pod.name}/stop`],
    ] as const) {
      const res = await call(method, path, undefined, as);
      expect(res.status, path).toBe(503);
      expect(res.body, path).toEqual({ error: expect.any(String) });
    }
  });

  it("fails an in-flight command with 503 as soon as the agent drops, not after the 30 s timeout", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { pod, as } = await userWithPod(host.id);
    const reply = call("POST", `/api/pods/${pod.name}/stop`, undefined, as);
    expect(await agent.next("control:call")).toMatchObject({ op: "pod.stop", timeoutMs: 30_000 });
    const dropped = Date.now();
    agent.close(1001, "host going down");
    const res = await reply;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: expect.stringContaining("disconnected") });
    expect(Date.now() - dropped).toBeLessThan(3_000);
    await until(async () => (await hostRecord(host.id))?.status === "offline", "the host to go offline");
  });

  it("keeps a command failed by a disconnect failed: a retry is not re-sent, a late answer only corrects D1", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, status: "running" });
    const first = await FakeAgent.online(host, [running(pod.name)]);
    const key = crypto.randomUUID();
    const stop = callHost(env, host.id, "pod.stop", { name: pod.name }, { idempotencyKey: key });
    const sent = await first.agent.next("control:call");
    first.agent.close();
    const failed = await stop;
    expect(failed).toMatchObject({ ok: false, code: "unavailable" });

    // The agent reconnects; the command had in fact finished, and its answer arrives on the new socket.
    const second = await FakeAgent.online(host, [running(pod.name)]);
    second.agent.ok(sent, stopped(pod.name));
    await until(async () => (await podRecord(pod.id))?.status === "stopped", "D1 to follow the late answer");

    const retry = await callHost(env, host.id, "pod.stop", { name: pod.name }, { idempotencyKey: key });
    expect(retry).toEqual(failed);
    await second.agent.expectNone("control:call");
  });

  it("a pod's delete cut by a disconnect can be asked again: the retry reaches the host", async () => {
    // Found by test/chaos/control-socket-flap.test.ts: a key per pod answered every retry with the
    // first attempt's "disconnected" for an hour, so the pod could not be deleted.
    const host = await insertHost();
    const { pod, as } = await userWithPod(host.id);
    const first = await FakeAgent.online(host, [running(pod.name)]);
    // the pod's delete, past any other command the hello brings
    const deleteCall = async (agent: FakeAgent) => {
      for (;;) {
        const next = await agent.next("control:call");
        if (next.op === "pod.delete") return next;
      }
    };
    const cut = call("DELETE", `/api/pods/${pod.name}`, undefined, as);
    const sent = await deleteCall(first.agent);
    expect(sent).toMatchObject({ params: { name: pod.name } });
    first.agent.close();
    expect(await cut).toMatchObject({
      status: 503,
      body: { error: expect.stringContaining("disconnected") },
    });

    const second = await FakeAgent.online(host, [running(pod.name)]);
    const retry = call("DELETE", `/api/pods/${pod.name}`, undefined, as);
    const again = await deleteCall(second.agent);
    expect(again).toMatchObject({ params: { name: pod.name } });
    expect(again.idempotencyKey).not.toBe(sent.idempotencyKey);
    second.agent.ok(again, { deleted: true });
    expect(await retry).toMatchObject({ status: 200 });
    expect(await podRecord(pod.id)).toMatchObject({ status: "deleted" });
  });

  it("fails a call the agent never answers after its timeout, and keeps it failed", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const key = crypto.randomUUID();
    const started = Date.now();
    const name = uniquePodName();
    const ping = callHost(env, host.id, "pod.stop", { name }, { timeoutMs: 200, idempotencyKey: key });
    const sent = await agent.next("control:call");
    expect(sent.timeoutMs).toBe(200);
    const outcome = await ping;
    expect(outcome).toMatchObject({ ok: false, code: "unavailable" });
    // The agent is given the timeout (and answers first); the DO waits a grace second past it.
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(Date.now() - started).toBeLessThan(5_000);

    agent.ok(sent, running(name)); // too late: the caller was told it failed
    expect(await callHost(env, host.id, "pod.stop", { name }, { idempotencyKey: key })).toEqual(outcome);
    await agent.expectNone("control:call");
  });

  it("sends read-only calls (ping, status) without journaling them: a retry simply asks again", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const key = crypto.randomUUID();
    const first = callHost(env, host.id, "host.ping", {}, { idempotencyKey: key });
    agent.ok(await agent.next("control:call"), { pong: true });
    expect(await first).toEqual({ ok: true, value: { pong: true } });
    const second = callHost(env, host.id, "host.ping", {}, { idempotencyKey: key });
    agent.ok(await agent.next("control:call"), { pong: true });
    expect(await second).toEqual({ ok: true, value: { pong: true } });
  });

  it("sends pod.exec without a journal row (its outcome is never replayed); a disconnect still fails it at once", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { pod, as } = await userWithPod(host.id);
    const result = { exitCode: 3, stdout: "out", stderr: "err", durationMs: 4, timedOut: false };
    const reply = call("POST", `/api/pods/${pod.name}/exec`, { command: ["false"] }, as);
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.exec", params: { name: pod.name, command: ["false"] } });
    agent.ok(sent, result);
    expect(await reply).toMatchObject({
      status: 200,
      body: { exit_code: 3, stdout: "out", stderr: "err", duration_ms: 4, timed_out: false },
    });
    expect((await journal(host.id)).filter((row) => row.idempotency_key === sent.idempotencyKey)).toEqual([]);

    const stranded = call("POST", `/api/pods/${pod.name}/exec`, { command: ["sleep", "60"] }, as);
    await agent.next("control:call");
    agent.close(1001, "host going down");
    expect(await stranded).toMatchObject({
      status: 503,
      body: { error: expect.stringContaining("disconnected") },
    });
    // a journaled command beside it still leaves its row
    const { agent: back } = await FakeAgent.online(host);
    const key = crypto.randomUUID();
    const restart = callHost(env, host.id, "pod.restart", { name: pod.name }, { idempotencyKey: key });
    back.ok(await back.next("control:call"), running(pod.name));
    expect(await restart).toMatchObject({ ok: true });
    expect((await journal(host.id)).map((row) => row.idempotency_key)).toEqual([key]);
  });

  it("runs a command once per idempotency key: a concurrent duplicate shares the answer, a later one reads it", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const key = crypto.randomUUID();
    const name = uniquePodName();
    const first = callHost(env, host.id, "pod.restart", { name }, { idempotencyKey: key, timeoutMs: 10_000 });
    const sent = await agent.next("control:call");
    expect(sent.idempotencyKey).toBe(key);

    const duplicate = callHost(env, host.id, "pod.restart", { name }, { idempotencyKey: key });
    await agent.expectNone("control:call");
    agent.ok(sent, running(name));
    expect(await first).toEqual({ ok: true, value: running(name) });
    expect(await duplicate).toEqual({ ok: true, value: running(name) });

    expect(await callHost(env, host.id, "pod.restart", { name }, { idempotencyKey: key })).toEqual({
      ok: true,
      value: running(name),
    });
    await agent.expectNone("control:call");
    expect((await journal(host.id)).filter((row) => row.idempotency_key === key)).toEqual([
      { idempotency_key: key, state: "done", outcome: JSON.stringify({ ok: true, value: running(name) }) },
    ]);
  });
});

describe("agent:pod-status", () => {
  it("moves the reporting host's pods with an event, and never another host's", async () => {
    const [host, intruder] = [await insertHost(), await insertHost()];
    const pod = await insertPod({ hostId: host.id, status: "running" });
    const own = await insertPod({ hostId: intruder.id, status: "running" });
    const { agent } = await FakeAgent.online(host, [running(pod.name)]);
    const { agent: other } = await FakeAgent.online(intruder, [running(own.name)]);

    other.podStatus(stopped(pod.name), "stopped by someone else");
    other.podStatus(stopped(own.name), "its own pod");
    await until(
      async () => (await podRecord(own.id))?.status === "stopped",
      "the intruder's own pod to stop",
    );
    expect(await podRecord(pod.id)).toMatchObject({ status: "running" });
    expect(await podEventRecords(pod.id)).toEqual([]);

    agent.podStatus(stopped(pod.name), "the container exited (code 137)");
    await until(async () => (await podRecord(pod.id))?.status === "stopped", "the pod to stop");
    expect(await podEventRecords(pod.id)).toEqual([
      {
        type: "stopped",
        message: "the container exited (code 137)",
        metadata: JSON.stringify({ source: "host" }),
      },
    ]);
  });
});

/** Tags the object's current in-memory instance, to tell later whether it is still the same one. */
const tagInstance = (hostId: string) =>
  runInDurableObject(hostAgentStub(env, hostId), (instance) => {
    (instance as unknown as Record<string, unknown>).testTag = true;
  });
const sameInstance = (hostId: string) =>
  runInDurableObject(
    hostAgentStub(env, hostId),
    (instance) => (instance as unknown as Record<string, unknown>).testTag === true,
  );

/** Resets the host's object as a deploy or a crash would: in-memory state gone, its sockets dropped. */
const resetObject = (hostId: string) =>
  runInDurableObject(hostAgentStub(env, hostId), (_instance, state) =>
    state.abort("reset by the test"),
  ).catch(
    () => undefined, // the reset also fails the request that asked for it
  );

describe("hibernation and resets", () => {
  it("an idle object hibernates with the socket open and wakes for the next call; a pending call keeps it resident", async () => {
    const idle = await insertHost();
    const busy = await insertHost();
    const { agent: idleAgent } = await FakeAgent.online(idle);
    const { agent: busyAgent } = await FakeAgent.online(busy);
    await Promise.all([tagInstance(idle.id), tagInstance(busy.id)]);
    const pending = callHost(env, busy.id, "host.ping", {}, { timeoutMs: 60_000 });
    const sent = await busyAgent.next("control:call");

    // workerd evicts an object idle for ~10 s (each look inside counts as activity, so look rarely).
    let evicted = false;
    for (let attempt = 0; attempt < 3 && !evicted; attempt++) {
      await sleep(11_000);
      evicted = !(await sameInstance(idle.id));
    }
    expect(evicted).toBe(true);
    const stillOpen = await Promise.race([idleAgent.closed.then(() => false), sleep(50).then(() => true)]);
    expect(stillOpen).toBe(true);
    expect((await hostRecord(idle.id))?.status).toBe("online");

    const afterWake = callHost(env, idle.id, "host.ping", {}, { timeoutMs: 10_000 });
    idleAgent.ok(await idleAgent.next("control:call"), { pong: true });
    expect(await afterWake).toEqual({ ok: true, value: { pong: true } });

    expect(await sameInstance(busy.id)).toBe(true);
    busyAgent.ok(sent, { pong: true });
    expect(await pending).toEqual({ ok: true, value: { pong: true } });
  }, 60_000);

  it("a reset fails the in-flight caller with unavailable; its journaled command is never re-sent", async () => {
    const host = await insertHost();
    const pod = await insertPod({ hostId: host.id, status: "running" });
    const first = await FakeAgent.online(host, [running(pod.name)]);
    const key = crypto.randomUUID();
    const stop = callHost(env, host.id, "pod.stop", { name: pod.name }, { idempotencyKey: key });
    const sent = await first.agent.next("control:call");

    await resetObject(host.id);
    expect(await stop).toMatchObject({ ok: false, code: "unavailable" });
    expect((await first.agent.closed).code).toBe(1006);

    const second = await FakeAgent.online(host, [running(pod.name)]);
    const retry = await callHost(env, host.id, "pod.stop", { name: pod.name }, { idempotencyKey: key });
    expect(retry).toMatchObject({ ok: false, code: "unavailable" });
    await second.agent.expectNone("control:call");

    // The command did run; its answer comes late on the new socket. D1 follows the host, and the key
    // keeps the answer its callers were given.
    second.agent.ok(sent, stopped(pod.name));
    await until(async () => (await podRecord(pod.id))?.status === "stopped", "D1 to follow the late answer");
    expect(await callHost(env, host.id, "pod.stop", { name: pod.name }, { idempotencyKey: key })).toEqual(
      retry,
    );
    await second.agent.expectNone("control:call");
  });

  it("a reset during an API call answers 503 {error}, not 500", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const { pod, as } = await userWithPod(host.id);
    const reply = call("GET", `/api/pods/${pod.name}`, undefined, as);
    await agent.next("control:call");
    await resetObject(host.id);
    const res = await reply;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: expect.any(String) });
  });
});
