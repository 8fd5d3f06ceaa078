import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { LOG_FOLLOW_MAX_SECONDS } from "../../shared/protocol/inside";
import { LOG_FOLLOW_LIMITS } from "../../worker/services/inside/follow";
import { FakeAgent, insertHost, insertPod, type TestHost } from "./support/agent";
import { call, freshIp, registerUser, sharedUser, type TestUser } from "./support/client";

/**
 * `GET /api/pods/{name}/logs?follow=true` through the Worker, a FakeAgent playing the host: what is
 * refused before the host is asked, what the host is asked, the events relayed to the caller as the
 * host sends them, and the per-pod and per-team caps on follows held at once (429).
 */

afterEach(() => FakeAgent.closeAll());

async function setup(status = "running") {
  const [user, host] = await Promise.all([registerUser("Follower"), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status });
  return { user, host, pod };
}

const online = (host: TestHost, pod: string) =>
  FakeAgent.online(host, [{ name: pod, state: "running", ip: "10.0.0.2" }]);

const follow = (user: TestUser, pod: string, query = "") =>
  exports.default.fetch(`http://localhost/api/pods/${pod}/logs?follow=true${query}`, {
    headers: { authorization: `Bearer ${user.token}`, "cf-connecting-ip": freshIp() },
  });

/** the host's side: a chunked stream into the live relay, written by the test */
function liveStream(host: TestHost, relay: string) {
  let push: (text: string) => void = () => undefined;
  let end: () => void = () => undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      push = (text) => controller.enqueue(new TextEncoder().encode(text));
      end = () => controller.close();
    },
  });
  const put = exports.default.fetch(`http://localhost/agent/relay/live/${relay}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${host.token}` },
    body,
    duplex: "half",
  } as RequestInit);
  return { push: (text: string) => push(text), end: () => end(), put };
}

/** reads a stream's text until `want` is in it */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, want: string, seen = "") {
  const decoder = new TextDecoder();
  let text = seen;
  while (!text.includes(want)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before ${JSON.stringify(want)}; got ${JSON.stringify(text)}`);
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

const places = (key: string) => env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(key));

describe("GET /api/pods/{name}/logs?follow=true", () => {
  it("relays the host's events to the caller as they come, and ends with the host's stream", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const res = follow(user, pod.name, "&source=web&lines=5&grep=GET%20%2F");
    const sent = await agent.next("control:call");
    expect(sent).toMatchObject({
      op: "pod.logs.follow",
      params: { name: pod.name, source: "web", lines: 5, grep: "GET /", maxSeconds: LOG_FOLLOW_MAX_SECONDS },
    });
    const relay = (sent.params as { relay: string }).relay;
    expect(relay.startsWith(`${host.id}/`)).toBe(true);
    const live = liveStream(host, relay);
    live.push(`data: ${JSON.stringify({ source: "web", lines: ["GET / 200"] })}\n\n`);
    agent.ok(sent, { exists: true });
    const answer = await res;
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    let text = await readUntil(reader, "GET / 200");
    // a line the host sends after the caller got the first ones arrives too
    live.push(`data: ${JSON.stringify({ source: "web", lines: ["GET /later 200"] })}\n\n`);
    text = await readUntil(reader, "GET /later 200", text);
    live.push(`event: end\ndata: {"reason":"done"}\n\n`);
    live.end();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain("event: end");
    expect((await live.put).status).toBe(201);
  });

  it("gives a follow's place back when its stream ends", async () => {
    const { user, host, pod } = await setup();
    const teamId = user.user.active_team_id;
    const podPlaces = places(`logs-follow:pod:${teamId}:${pod.name}`);
    for (let i = 0; i < LOG_FOLLOW_LIMITS.perPod - 1; i++)
      expect(await podPlaces.enter(LOG_FOLLOW_LIMITS.perPod, 60_000)).toHaveProperty("lease");
    const { agent } = await online(host, pod.name);
    const res = follow(user, pod.name);
    const sent = await agent.next("control:call");
    const live = liveStream(host, (sent.params as { relay: string }).relay);
    agent.ok(sent, { exists: false });
    const answer = await res;
    expect(answer.status).toBe(200);
    live.end();
    expect(await answer.text()).toBe("");
    await live.put;
    // the last place is free again (the follow's own was given back)
    for (let i = 0; ; i++) {
      const place = await podPlaces.enter(LOG_FOLLOW_LIMITS.perPod, 60_000);
      if ("lease" in place) break;
      if (i > 50) throw new Error("the follow's place was never given back");
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  it("is 429 with Retry-After beyond the follows a pod or a team may hold at once, before asking the host", async () => {
    const { user, host, pod } = await setup();
    const teamId = user.user.active_team_id;
    const { agent } = await online(host, pod.name);
    const podPlaces = places(`logs-follow:pod:${teamId}:${pod.name}`);
    for (let i = 0; i < LOG_FOLLOW_LIMITS.perPod; i++)
      await podPlaces.enter(LOG_FOLLOW_LIMITS.perPod, 60_000);
    const perPod = await follow(user, pod.name);
    expect(perPod.status).toBe(429);
    expect(perPod.headers.get("retry-after")).toBe("1");
    expect(((await perPod.json()) as { error: string }).error).toMatch(/at most 4 per pod/);

    const other = await insertPod({ hostId: host.id, teamId, status: "running" });
    const teamPlaces = places(`logs-follow:team:${teamId}`);
    for (let i = 0; i < LOG_FOLLOW_LIMITS.perTeam; i++)
      await teamPlaces.enter(LOG_FOLLOW_LIMITS.perTeam, 60_000);
    const perTeam = await follow(user, other.name);
    expect(perTeam.status).toBe(429);
    expect(((await perTeam.json()) as { error: string }).error).toMatch(/at most 10 per team/);
    // the refused pod's place was not kept either: its own count stays empty
    expect(await places(`logs-follow:pod:${teamId}:${other.name}`).enter(1, 60_000)).toHaveProperty("lease");
    await agent.expectNone("control:call");
  });

  it("is the host's 400 for a pattern that does not compile, with no stream", async () => {
    const { user, host, pod } = await setup();
    const { agent } = await online(host, pod.name);
    const res = follow(user, pod.name, "&grep=(unclosed");
    const sent = await agent.next("control:call");
    agent.fail(sent, "bad_request", "grep: invalid pattern: missing closing parenthesis");
    const answer = await res;
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: "grep: invalid pattern: missing closing parenthesis" });
  });

  it("refuses bad parameters, a stopped pod, other teams and strangers", async () => {
    const { user, pod } = await setup("stopped");
    const as = { token: user.token };
    const bad = await call("GET", `/api/pods/${pod.name}/logs?follow=yes`, undefined, as);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^follow: /);
    const stopped = await call("GET", `/api/pods/${pod.name}/logs?follow=true`, undefined, as);
    expect(stopped).toMatchObject({ status: 400, body: { error: expect.stringContaining("not running") } });
    const eve = await sharedUser();
    const foreign = await call("GET", `/api/pods/${pod.name}/logs?follow=true`, undefined, {
      token: eve.token,
    });
    expect(foreign.status).toBe(404);
    const anonymous = await call("GET", `/api/pods/${pod.name}/logs?follow=true`);
    expect(anonymous.status).toBe(401);
  });

  it("keeps the host's live relay to the host that owns it", async () => {
    const [{ host }, stranger] = await Promise.all([setup(), insertHost()]);
    const res = await exports.default.fetch(
      `http://localhost/agent/relay/live/${host.id}/${crypto.randomUUID()}`,
      {
        method: "PUT",
        headers: { authorization: `Bearer ${stranger.token}` },
        body: "data: {}\n\n",
      },
    );
    expect(res.status).toBe(404);
    const anonymous = await exports.default.fetch(
      `http://localhost/agent/relay/live/${host.id}/${crypto.randomUUID()}`,
      {
        method: "PUT",
        body: "data: {}\n\n",
      },
    );
    expect(anonymous.status).toBe(401);
  });
});
