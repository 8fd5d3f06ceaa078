import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { PodSpec } from "../../shared/protocol";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
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
import { KEYS } from "./support/ssh-keys";
import { teamFixture } from "./support/teams";

/**
 * SSH access to pods through the Worker: the connection details read from D1, and the pod's
 * authorized_keys through the host agent, played here by a FakeAgent on the host's socket.
 */

afterEach(() => FakeAgent.closeAll());

const as = (user: TestUser) => ({ token: user.token });

/** A pod of the user's active team on `host`, holding SSH port `port` (null: none allocated). */
async function podOn(user: TestUser, host: TestHost | null, port: number | null = 2201) {
  const pod = await insertPod({ hostId: host?.id ?? null, teamId: user.user.active_team_id });
  await env.DB.prepare("UPDATE pods SET ssh_port = ? WHERE id = ?").bind(port, pod.id).run();
  return pod;
}

describe("GET /api/pods/{name}/ssh", () => {
  it("gives user, host, port and the command to run", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const pod = await podOn(user, host, 2242);
    const res = await call("GET", `/api/pods/${pod.name}/ssh`, undefined, as(user));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user: "pod_user",
      host: "ssh.example.test",
      port: 2242,
      ssh_ready: true,
      command: "ssh -p 2242 pod_user@ssh.example.test",
    });
  });

  it("answers 503 with ssh_ready false while no port is allocated", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    for (const pod of [await podOn(user, null, null), await podOn(user, host, null)]) {
      const res = await call("GET", `/api/pods/${pod.name}/ssh`, undefined, as(user));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: expect.stringContaining("no SSH port"), ssh_ready: false });
    }
  });

  it("answers 404 for an unknown pod and for another team's pod", async () => {
    const [alice, eve, host] = await Promise.all([registerUser(), registerUser(), insertHost()]);
    const pod = await podOn(alice, host);
    for (const name of [pod.name, "no-such-pod"]) {
      const res = await call("GET", `/api/pods/${name}/ssh`, undefined, as(eve));
      expect(res.status, name).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });
});

const keysPath = (name: string) => `/api/pods/${name}/ssh/keys`;

describe("/api/pods/{name}/ssh/keys", () => {
  it("GET lists the lines of the pod's authorized_keys (pod.ssh.keys.list)", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);

    const reply = call("GET", keysPath(pod.name), undefined, as(user));
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({ op: "pod.ssh.keys.list", params: { name: pod.name } });
    agent.ok(sent, { keys: [KEYS.ed25519.line, "no-pty ssh-ed25519 AAAAhand written"] });
    expect(await reply).toMatchObject({
      status: 200,
      body: { keys: [KEYS.ed25519.line, "no-pty ssh-ed25519 AAAAhand written"] },
    });

    const empty = call("GET", keysPath(pod.name), undefined, as(user));
    agent.ok(await agent.next("control:call"), { keys: [] });
    expect(await empty).toMatchObject({ status: 200, body: { keys: [] } });
  });

  it("POST installs a new key (normalized) with 201 and an ssh_key_added event", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);
    const [type, data] = KEYS.ed25519.line.split(" ");

    const reply = call("POST", keysPath(pod.name), { key: `${type}\t${data}  ada@laptop\n` }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [KEYS.rsa2048.line] });
    const add = await agent.next("control:call");
    expect(add).toMatchObject({ op: "pod.ssh.keys.add", params: { name: pod.name, key: KEYS.ed25519.line } });
    agent.ok(add, { added: true });
    const res = await reply;
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      message: "key added",
      key: KEYS.ed25519.line,
      fingerprint: KEYS.ed25519.fingerprint,
    });
    expect(await podEventRecords(pod.id)).toEqual([
      {
        type: "ssh_key_added",
        message: 'SSH key "ada@laptop" added',
        metadata: JSON.stringify({ fingerprint: KEYS.ed25519.fingerprint, type: "ssh-ed25519" }),
      },
    ]);
  });

  it("POST answers 200 'key already exists' for a key the pod has, whatever its comment or options", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);
    const [type, data] = KEYS.ecdsa256.line.split(" ");

    const reply = call("POST", keysPath(pod.name), { key: `${type} ${data} another comment` }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [`no-pty ${KEYS.ecdsa256.line}`] });
    await agent.expectNone("control:call");
    expect(await reply).toMatchObject({ status: 200, body: { message: "key already exists" } });

    // A commented-out line does not count: the key is added.
    const commented = call("POST", keysPath(pod.name), { key: KEYS.ecdsa256.line }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [`# ${KEYS.ecdsa256.line}`] });
    const add = await agent.next("control:call");
    expect(add).toMatchObject({ op: "pod.ssh.keys.add", params: { key: KEYS.ecdsa256.line } });
    agent.ok(add, { added: true });
    expect((await commented).status).toBe(201);

    // The agent has the last word: a key another request added meanwhile is not added twice.
    const raced = call("POST", keysPath(pod.name), { key: KEYS.ecdsa256.line }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [] });
    agent.ok(await agent.next("control:call"), { added: false });
    expect(await raced).toMatchObject({ status: 200, body: { message: "key already exists" } });
    expect((await podEventRecords(pod.id)).map((e) => e.type)).toEqual(["ssh_key_added"]);
  });

  it("POST answers 400 for an invalid key without asking the host", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);
    for (const [key, reason] of [
      [KEYS.rsa1024.line, /key: .*2048/],
      [KEYS.dsa.line, /key: DSA/],
      [`${KEYS.ed25519.line}\n${KEYS.rsa2048.line}`, /key: .*one line/],
      ["", /key: is empty/],
    ] as const) {
      const res = await call("POST", keysPath(pod.name), { key }, as(user));
      expect(res.status, key).toBe(400);
      expect(res.body).toEqual({ error: expect.stringMatching(reason) });
    }
    const missing = await call("POST", keysPath(pod.name), {}, as(user));
    expect(missing).toMatchObject({ status: 400, body: { error: "key: is required" } });
    await agent.expectNone("control:call");
  });

  it("DELETE removes the file's line(s) holding the key, with 200 and an ssh_key_removed event", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);
    const [type, data] = KEYS.rsa2048.line.split(" ");
    const inFile = `from="10.0.0.0/8" ${KEYS.rsa2048.line}`;

    // The request names the key without its comment; the exact line of the file is what goes.
    const reply = call("DELETE", keysPath(pod.name), { key: `${type} ${data}` }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [KEYS.ed25519.line, inFile] });
    const remove = await agent.next("control:call");
    expect(remove).toMatchObject({ op: "pod.ssh.keys.remove", params: { name: pod.name, key: inFile } });
    agent.ok(remove, { removed: true });
    expect(await reply).toMatchObject({ status: 200, body: { status: "deleted" } });
    expect(await podEventRecords(pod.id)).toEqual([
      {
        type: "ssh_key_removed",
        message: 'SSH key "rsa2048@ci" removed',
        metadata: JSON.stringify({ fingerprint: KEYS.rsa2048.fingerprint, type: "ssh-rsa" }),
      },
    ]);
  });

  it("DELETE can remove a key the pod's user wrote by hand, even of a type no longer accepted", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);
    const reply = call("DELETE", keysPath(pod.name), { key: KEYS.dsa.line }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [KEYS.dsa.line] });
    const remove = await agent.next("control:call");
    expect(remove).toMatchObject({ op: "pod.ssh.keys.remove", params: { key: KEYS.dsa.line } });
    agent.ok(remove, { removed: true });
    expect((await reply).status).toBe(200);
  });

  it("DELETE answers 404 when the pod has no keys or not this one", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(user, host);
    for (const keys of [[], [KEYS.ed25519Other.line]]) {
      const reply = call("DELETE", keysPath(pod.name), { key: KEYS.ed25519.line }, as(user));
      agent.ok(await agent.next("control:call"), { keys });
      const res = await reply;
      expect(res.status, JSON.stringify(keys)).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    // Gone between the read and the removal: still 404.
    const raced = call("DELETE", keysPath(pod.name), { key: KEYS.ed25519.line }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [KEYS.ed25519.line] });
    agent.ok(await agent.next("control:call"), { removed: false });
    expect((await raced).status).toBe(404);
    await agent.expectNone("control:call");
    expect(await podEventRecords(pod.id)).toEqual([]);
  });

  it("DELETE answers 400 for something that is not a key line", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const pod = await podOn(user, host);
    for (const key of ["not a key", `${KEYS.ed25519.line}\n${KEYS.rsa2048.line}`]) {
      const res = await call("DELETE", keysPath(pod.name), { key }, as(user));
      expect(res.status, key).toBe(400);
      expect(res.body.error).toMatch(/^key: /);
    }
    const noBody = await call("DELETE", keysPath(pod.name), undefined, as(user));
    expect(noBody.status).toBe(400);
    expect(noBody.body).toEqual({ error: expect.any(String) });
  });

  it("answers 503 when the pod's host has no agent connected, or the pod has no host", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    for (const pod of [await podOn(user, host), await podOn(user, null, null)]) {
      for (const [method, body] of [
        ["GET", undefined],
        ["POST", { key: KEYS.ed25519.line }],
        ["DELETE", { key: KEYS.ed25519.line }],
      ] as const) {
        const res = await call(method, keysPath(pod.name), body, as(user));
        expect(res.status, `${method} ${pod.name}`).toBe(503);
        expect(res.body).toEqual({ error: expect.any(String) });
      }
    }
  });

  it("answers 404 for an unknown pod or another team's, before looking at the key", async () => {
    const [alice, eve, host] = await Promise.all([registerUser(), registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await podOn(alice, host);
    for (const name of [pod.name, "no-such-pod"]) {
      for (const [method, body] of [
        ["GET", undefined],
        ["POST", { key: KEYS.ed25519.line }],
        ["POST", { key: "not a key" }],
        ["DELETE", { key: KEYS.ed25519.line }],
      ] as const) {
        const res = await call(method, keysPath(name), body, as(eve));
        expect(res.status, `${method} ${name}`).toBe(404);
      }
    }
    await agent.expectNone("control:call");
  });
});

describe("auto_inject account keys", () => {
  /** Creates a pod on `host` and returns the spec its agent was asked to create. */
  async function createPodSpec(
    user: TestUser,
    host: TestHost,
    agent: FakeAgent,
    body: Record<string, unknown> = {},
  ) {
    const name = `p${crypto.randomUUID().slice(0, 8)}`;
    const res = await call(
      "POST",
      "/api/pods",
      { name, preset: "static", server_id: host.id, ...body },
      as(user),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const sent = await agent.next("control:call");
    expect(sent.op).toBe("pod.create");
    agent.ok(sent, { name, state: "running", ip: "172.30.0.9" });
    return sent.params as PodSpec;
  }

  it("installs the caller's auto_inject keys beside the request's ssh_key into a new pod, each once", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    for (const [line, auto_inject] of [
      [KEYS.ed25519.line, true],
      [KEYS.rsa2048.line, false],
      [KEYS.ecdsa256.line, true],
    ] as const) {
      await call("POST", "/api/ssh-keys", { public_key: line, auto_inject }, as(user));
    }
    // Someone else's auto_inject key never reaches this user's pods.
    const other = await registerUser();
    await call("POST", "/api/ssh-keys", { public_key: KEYS.ecdsa384.line, auto_inject: true }, as(other));

    const withRequestKey = await createPodSpec(user, host, agent, { ssh_key: `${KEYS.ed25519Other.line}\n` });
    expect(withRequestKey.authorizedKeys).toEqual([
      KEYS.ed25519Other.line,
      KEYS.ed25519.line,
      KEYS.ecdsa256.line,
    ]);

    // The request's key is also an account key: installed once.
    const [type, data] = KEYS.ecdsa256.line.split(" ");
    const duplicate = await createPodSpec(user, host, agent, { ssh_key: `${type} ${data}` });
    expect(duplicate.authorizedKeys).toEqual([`${type} ${data}`, KEYS.ed25519.line]);

    // Account keys added or deleted later do not touch existing pods: no command goes to the host.
    const later = await call(
      "POST",
      "/api/ssh-keys",
      { public_key: KEYS.ecdsa521.line, auto_inject: true },
      as(user),
    );
    await call("DELETE", `/api/ssh-keys/${later.body.id}`, undefined, as(user));
    await agent.expectNone("control:call");
  });

  it("refuses an invalid ssh_key on pod creation with 400 before placing the pod", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    for (const [ssh_key, reason] of [
      ["not a key", /ssh_key: not an OpenSSH public key/],
      [KEYS.rsa1024.line, /ssh_key: .*2048/],
    ] as const) {
      const res = await call(
        "POST",
        "/api/pods",
        { name: "keyless", preset: "static", server_id: host.id, ssh_key },
        as(user),
      );
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.stringMatching(reason) });
    }
    await agent.expectNone("control:call");
    expect((await call("GET", "/api/pods", undefined, as(user))).body.total).toBe(0);
  });
});

describe("keys of a member who leaves the team (attacker: the departing member)", () => {
  /** `user` adds `line` to the pod through the API, the FakeAgent answering as the host. */
  async function addKey(user: TestUser, podName: string, agent: FakeAgent, line: string) {
    const reply = call("POST", keysPath(podName), { key: line }, as(user));
    agent.ok(await agent.next("control:call"), { keys: [] });
    const add = await agent.next("control:call");
    expect(add).toMatchObject({ op: "pod.ssh.keys.add" });
    agent.ok(add, { added: true });
    expect((await reply).status).toBe(201);
  }

  const keyRecords = async (podId: string) =>
    (
      await env.DB.prepare(
        "SELECT added_by, fingerprint, via, removal_requested_at FROM pod_ssh_keys WHERE pod_id = ?",
      )
        .bind(podId)
        .all<{ added_by: string; fingerprint: string; via: string; removal_requested_at: string | null }>()
    ).results;

  async function teamPodOnline() {
    const [fixture, host] = await Promise.all([teamFixture(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const pod = await insertPod({ hostId: host.id, teamId: fixture.team.id });
    for (const user of [fixture.owner, fixture.member]) {
      await call("POST", "/api/teams/switch", { team_id: fixture.team.id }, as(user));
    }
    return { ...fixture, host, agent, pod };
  }

  it("takes the removed member's keys out of the team's pods, with ssh_key_removed; others' stay", async () => {
    const { owner, member, team, agent, pod } = await teamPodOnline();
    await addKey(member, pod.name, agent, KEYS.ed25519.line);
    await addKey(owner, pod.name, agent, KEYS.ed25519Other.line);
    expect(await keyRecords(pod.id)).toHaveLength(2);

    const removal = call("DELETE", `/api/teams/${team.id}/members/${member.user.id}`, undefined, as(owner));
    const list = await agent.next("control:call");
    expect(list).toMatchObject({ op: "pod.ssh.keys.list", params: { name: pod.name } });
    agent.ok(list, { keys: [KEYS.ed25519.line, KEYS.ed25519Other.line] });
    const remove = await agent.next("control:call");
    expect(remove).toMatchObject({
      op: "pod.ssh.keys.remove",
      params: { name: pod.name, key: KEYS.ed25519.line },
    });
    agent.ok(remove, { removed: true });
    expect((await removal).status).toBe(200);
    await agent.expectNone("control:call");

    const removed = (await podEventRecords(pod.id)).filter((e) => e.type === "ssh_key_removed");
    expect(removed).toHaveLength(1);
    expect(JSON.parse(removed[0]?.metadata ?? "{}")).toEqual({
      fingerprint: KEYS.ed25519.fingerprint,
      type: "ssh-ed25519",
    });
    expect(removed[0]?.message).toContain("left the team");
    expect(await keyRecords(pod.id)).toEqual([
      {
        added_by: owner.user.id,
        fingerprint: KEYS.ed25519Other.fingerprint,
        via: "api",
        removal_requested_at: null,
      },
    ]);
  });

  it("a member who leaves while their pod's host is down loses the key once the cron reaches it", async () => {
    const { member, team, host, agent, pod } = await teamPodOnline();
    await addKey(member, pod.name, agent, KEYS.ed25519.line);
    agent.close();

    const left = await call(
      "DELETE",
      `/api/teams/${team.id}/members/${member.user.id}`,
      undefined,
      as(member),
    );
    expect(left.status).toBe(200);
    const [pending] = await keyRecords(pod.id);
    expect(pending).toMatchObject({ added_by: member.user.id, removal_requested_at: expect.any(String) });

    const { agent: back } = await FakeAgent.online(host);
    const cron = runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "departed-member-keys"),
    );
    back.ok(await back.next("control:call"), { keys: [KEYS.ed25519.line] });
    const remove = await back.next("control:call");
    expect(remove).toMatchObject({ op: "pod.ssh.keys.remove", params: { key: KEYS.ed25519.line } });
    back.ok(remove, { removed: true });
    await cron;
    expect(await keyRecords(pod.id)).toEqual([]);
    expect((await podEventRecords(pod.id)).map((e) => e.type)).toContain("ssh_key_removed");
  });

  it("a clone takes over its source's key records", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const name = `k${crypto.randomUUID().slice(0, 8)}`;
    const body = { name, preset: "static", server_id: host.id, ssh_key: KEYS.ed25519.line };
    const source = await call("POST", "/api/pods", body, as(user));
    expect(source.status).toBe(202);
    agent.ok(await agent.next("control:call"), { name, state: "running", ip: "10.0.0.7" });
    await until(async () => (await podRecord(source.body.id))?.status === "running", "source running");

    const copy = `k${crypto.randomUUID().slice(0, 8)}`;
    const res = await call("POST", `/api/pods/${name}/clone`, { new_name: copy }, as(user));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await keyRecords(res.body.id)).toEqual([
      {
        added_by: user.user.id,
        fingerprint: KEYS.ed25519.fingerprint,
        via: "api",
        removal_requested_at: null,
      },
    ]);
    agent.ok(await agent.next("control:call"), { name: copy, state: "running", ip: "10.0.0.8" });
    for (const instance of introspector.get()) await instance.waitForStatus("complete");
  });

  it("records the creator's request key and auto_inject keys at admission", async () => {
    await using introspector = await introspectWorkflow(env.POD_CREATE);
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const { agent } = await FakeAgent.online(host);
    const account = await call(
      "POST",
      "/api/ssh-keys",
      { public_key: KEYS.rsa2048.line, auto_inject: true },
      as(user),
    );
    expect(account.status).toBe(201);
    const res = await call(
      "POST",
      "/api/pods",
      {
        name: `k${crypto.randomUUID().slice(0, 8)}`,
        preset: "static",
        server_id: host.id,
        ssh_key: KEYS.ed25519.line,
      },
      as(user),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const records = await keyRecords(res.body.id);
    expect(records.map((r) => [r.added_by, r.fingerprint, r.via]).sort()).toEqual(
      [
        [user.user.id, KEYS.ed25519.fingerprint, "api"],
        [user.user.id, KEYS.rsa2048.fingerprint, "auto_inject"],
      ].sort(),
    );
    // The workflow puts both keys into the pod's spec.
    const create = await agent.next("control:call");
    expect(create).toMatchObject({ op: "pod.create" });
    expect((create.params as { authorizedKeys: string[] }).authorizedKeys).toHaveLength(2);
    agent.ok(create, { name: res.body.name, state: "running", ip: "10.0.0.5" });
    await introspector.get()[0]?.waitForStatus("complete");
  });
});
