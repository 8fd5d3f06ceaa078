import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { PROTOCOL_VERSION } from "../../shared/protocol";
import { FakeAgent, insertHost, podRecord, type TestHost, until } from "./support/agent";
import { call, registerUser, type TestUser } from "./support/client";

/**
 * Several hosts in one region, each played by a FakeAgent: placement spreads by free capacity,
 * honours server_id, and skips hosts that are drained, report a problem, or whose agent is gone.
 * Every test works in us-east, and leaves its hosts drained so the next test starts from none.
 */

const REGION = "us-east";

afterEach(async () => {
  FakeAgent.closeAll();
  await env.DB.prepare("UPDATE hosts SET drained = 1 WHERE region = ?").bind(REGION).run();
});

const as = (user: TestUser) => ({ token: user.token });
const podName = () => `h${crypto.randomUUID().slice(0, 8)}`;
const setHost = (host: TestHost, sql: string) =>
  env.DB.prepare(`UPDATE hosts SET ${sql} WHERE id = ?`).bind(host.id).run();

/** The object has marked the host offline (its agent's socket closed). */
const untilOffline = (host: TestHost) =>
  until(
    async () =>
      (
        await env.DB.prepare("SELECT status FROM hosts WHERE id = ?")
          .bind(host.id)
          .first<{ status: string }>()
      )?.status === "offline",
    `host ${host.name} offline`,
  );

async function twoHosts() {
  const [user, a, b] = await Promise.all([registerUser(), insertHost(REGION), insertHost(REGION)]);
  const agentA = (await FakeAgent.online(a)).agent;
  const agentB = (await FakeAgent.online(b)).agent;
  return { user, a, b, agentA, agentB };
}

const create = (user: TestUser, body: Record<string, unknown>) =>
  call("POST", "/api/pods", { name: podName(), preset: "static", region: REGION, ...body }, as(user));

describe("placement across hosts", () => {
  it("spreads pods by free capacity, and honours server_id", async () => {
    const { user, a, b } = await twoHosts();
    const first = await create(user, {});
    const second = await create(user, {});
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(second.status, JSON.stringify(second.body)).toBe(202);
    expect(new Set([first.body.server_name, second.body.server_name])).toEqual(new Set([a.name, b.name]));

    const pinned = await create(user, { server_id: first.body.server_name === a.name ? a.id : b.id });
    expect(pinned.body.server_name).toBe(first.body.server_name);
  });

  it("places nothing on a drained host: server_id is 503 naming it, the region goes elsewhere", async () => {
    const { user, a, b } = await twoHosts();
    await setHost(a, "drained = 1");
    const pinned = await create(user, { server_id: a.id });
    expect(pinned.status).toBe(503);
    expect(pinned.body.error).toBe(`server ${a.name} is drained: it takes no new pods`);
    for (let i = 0; i < 3; i++) expect((await create(user, {})).body.server_name).toBe(b.name);

    await setHost(a, "drained = 0");
    expect((await create(user, { server_id: a.id })).status).toBe(202);
  });

  it("skips a host whose agent reports a problem (its ingress did not start), until it reports none", async () => {
    const [user, a, b] = await Promise.all([registerUser(), insertHost(REGION), insertHost(REGION)]);
    const sick = await FakeAgent.connect(a.token);
    sick.send({
      type: "agent:hello",
      protocol: PROTOCOL_VERSION,
      agentVersion: "test",
      inventory: [],
      problem: "ingress failed to start: bind() to 127.0.0.1:8080 failed (98: Address already in use)",
    });
    await sick.next("control:welcome");
    await FakeAgent.online(b);

    const pinned = await create(user, { server_id: a.id });
    expect(pinned.status).toBe(503);
    expect(pinned.body.error).toMatch(
      new RegExp(`^server ${a.name} cannot take pods: ingress failed to start`),
    );
    expect((await create(user, {})).body.server_name).toBe(b.name);

    sick.send({ type: "agent:host-health", problem: null });
    const placed = await until(async () => {
      const res = await create(user, { server_id: a.id });
      return res.status === 202 ? res : undefined;
    }, "the host to take pods again");
    expect(placed.body.server_name).toBe(a.name);
  });

  it("skips a host whose agent is gone; its pods' operations answer 503 naming it", async () => {
    const { user, a, b, agentA } = await twoHosts();
    const onA = await create(user, { server_id: a.id });
    agentA.ok(await agentA.next("control:call"), { name: onA.body.name, state: "running", ip: "10.1.0.2" });
    await until(async () => (await podRecord(onA.body.id))?.status === "running", "the pod running");

    agentA.close();
    await agentA.closed;
    await untilOffline(a);
    for (let i = 0; i < 3; i++) expect((await create(user, {})).body.server_name).toBe(b.name);
    for (const path of [`/api/pods/${onA.body.name}`, `/api/pods/${onA.body.name}/logs`]) {
      const res = await call("GET", path, undefined, as(user));
      expect(res.status, path).toBe(503);
      expect(res.body.error, path).toContain(`server ${a.name} is unavailable`);
    }
    const stop = await call("POST", `/api/pods/${onA.body.name}/stop`, undefined, as(user));
    expect(stop.status).toBe(503);
    expect(stop.body.error).toContain(a.name);
  });
});

describe("clone across hosts", () => {
  it("copies the home through R2 when the source's host takes no new pods", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const { user, a, b, agentA, agentB } = await twoHosts();
    const source = await create(user, { server_id: a.id });
    agentA.ok(await agentA.next("control:call"), {
      name: source.body.name,
      state: "running",
      ip: "10.1.0.3",
    });
    await until(async () => (await podRecord(source.body.id))?.status === "running", "the source running");
    await setHost(a, "drained = 1");

    const copy = podName();
    const res = await call("POST", `/api/pods/${source.body.name}/clone`, { new_name: copy }, as(user));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ status: "creating", server_name: b.name });

    // The source's host streams the home into a blob of its own…
    const exported = await agentA.next("control:call");
    expect(exported).toMatchObject({ op: "pod.clone.export", params: { name: source.body.name } });
    const exportKey = (exported.params as { blobKey: string }).blobKey;
    expect(exportKey).toMatch(new RegExp(`^staging/${a.id}/`));
    await env.BLOBS.put(exportKey, "a tar of the home");
    agentA.ok(exported, { bytes: 17 });

    // …which the new host gets under a key of its own, before the pod's first start.
    const created = await agentB.next("control:call");
    expect(created).toMatchObject({ op: "pod.create", params: { name: copy } });
    const homeKey = (created.params as { home: { blobKey: string } }).home.blobKey;
    expect(homeKey).toMatch(new RegExp(`^staging/${b.id}/`));
    expect(await (await env.BLOBS.get(homeKey))?.text()).toBe("a tar of the home");
    agentB.ok(created, { name: copy, state: "running", ip: "10.2.0.3" });

    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    expect(await podRecord(res.body.id)).toMatchObject({ status: "running" });
    expect(await env.BLOBS.head(exportKey)).toBeNull();
    expect(await env.BLOBS.head(homeKey)).toBeNull();
  });

  it("answers 503 naming the source's host when its agent is gone (nothing can be copied)", async () => {
    const { user, a, agentA } = await twoHosts();
    const source = await create(user, { server_id: a.id });
    agentA.ok(await agentA.next("control:call"), {
      name: source.body.name,
      state: "running",
      ip: "10.1.0.4",
    });
    await until(async () => (await podRecord(source.body.id))?.status === "running", "the source running");
    agentA.close();
    await agentA.closed;
    await untilOffline(a);
    const res = await call("POST", `/api/pods/${source.body.name}/clone`, { new_name: podName() }, as(user));
    expect(res.status).toBe(503);
    expect(res.body.error).toContain(`server ${a.name}`);
  });
});
