import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { TERMINAL_INPUT_BACKLOG_BYTES } from "../../shared/protocol/terminal";
import { FakeAgent, insertHost, insertPod, type TestHost } from "./support/agent";
import { call, freshIp, registerUser, type TestUser } from "./support/client";

/**
 * The web terminal's WebSocket through the Worker (docs/dashboard.md "Terminal"): the upgrade's
 * checks, the session opened on the host (a FakeAgent plays the agent on the control socket and
 * dials the session's relay like the real one), and the relay's pass-through and bounds.
 */

afterEach(() => FakeAgent.closeAll());

const OWN_ORIGIN = new URL(env.PUBLIC_URL).origin;

/** The browser's upgrade request, with a bearer token (or a cookie) and the page's Origin. */
function upgrade(
  name: string,
  opts: { token?: string; cookie?: string; origin?: string; query?: string } = {},
) {
  const headers: Record<string, string> = { upgrade: "websocket", "cf-connecting-ip": freshIp() };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.origin) headers.origin = opts.origin;
  return exports.default.fetch(
    new Request(`http://localhost/api/pods/${name}/terminal${opts.query ?? "?cols=100&rows=30"}`, {
      headers,
    }),
  );
}

/** A socket's frames and its close, as the test reads them. */
function collect(ws: WebSocket) {
  const frames: (string | ArrayBuffer)[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
  });
  ws.addEventListener("message", (event) => {
    frames.push(event.data as string | ArrayBuffer);
  });
  (ws as WebSocket & { binaryType: string }).binaryType = "arraybuffer";
  ws.accept();
  const until = async (pred: () => boolean, what: string) => {
    const deadline = Date.now() + 3_000;
    while (!pred()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const binary = () =>
    frames.filter((f) => typeof f !== "string").reduce((n, f) => n + (f as ArrayBuffer).byteLength, 0);
  const texts = () => frames.filter((f): f is string => typeof f === "string").map((t) => JSON.parse(t));
  return { frames, closed, until, binary, texts };
}

interface Session {
  browser: ReturnType<typeof collect> & { ws: WebSocket };
  agent: ReturnType<typeof collect> & { ws: WebSocket };
  params: { name: string; relay: string; team: string; cols: number; rows: number };
}

/** Opens a session the way the real agent answers `pod.terminal.open`: dial the relay, then say ok. */
async function openSession(
  user: TestUser,
  host: TestHost,
  control: FakeAgent,
  name: string,
): Promise<Session> {
  const response = upgrade(name, { token: user.token });
  const call = await control.next("control:call");
  expect(call.op).toBe("pod.terminal.open");
  const params = call.params as Session["params"];
  const dialed = await exports.default.fetch(
    new Request(`http://localhost/agent/terminal/${params.relay}`, {
      headers: { upgrade: "websocket", authorization: `Bearer ${host.token}` },
    }),
  );
  expect(dialed.status).toBe(101);
  const agentWs = dialed.webSocket as WebSocket;
  const agent = { ws: agentWs, ...collect(agentWs) };
  control.ok(call, { opened: true });
  const res = await response;
  expect(res.status).toBe(101);
  const browserWs = res.webSocket as WebSocket;
  return { browser: { ws: browserWs, ...collect(browserWs) }, agent, params };
}

async function setup() {
  const [user, host] = await Promise.all([registerUser(), insertHost()]);
  const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id });
  const { agent } = await FakeAgent.online(host, [{ name: pod.name, state: "running", ip: "10.0.0.2" }]);
  return { user, host, pod, control: agent };
}

describe("GET /api/pods/{name}/terminal", () => {
  it("opens a session on the pod's host and passes bytes both ways through its relay", async () => {
    const { user, host, pod, control } = await setup();
    const s = await openSession(user, host, control, pod.name);
    expect(s.params).toMatchObject({ name: pod.name, team: user.user.active_team_id, cols: 100, rows: 30 });
    expect(s.params.relay.startsWith(`${host.id}/`)).toBe(true);

    // what the shell printed before the browser came is kept for it
    s.agent.ws.send(new TextEncoder().encode("prompt$ "));
    s.browser.ws.send(new TextEncoder().encode("echo hi\r"));
    await s.agent.until(() => s.agent.binary() === 8, "the keystrokes at the agent");
    await s.browser.until(() => s.browser.binary() === 8, "the output at the browser");

    s.browser.ws.send(JSON.stringify({ type: "resize", cols: 120, rows: 40 }));
    await s.agent.until(() => s.agent.texts().length === 1, "the resize at the agent");
    expect(s.agent.texts()[0]).toEqual({ type: "resize", cols: 120, rows: 40 });

    s.agent.ws.send(JSON.stringify({ type: "exit", code: 0 }));
    s.agent.ws.close(1000, "the shell exited");
    await s.browser.until(() => s.browser.texts().length === 1, "the exit at the browser");
    expect(s.browser.texts()[0]).toEqual({ type: "exit", code: 0 });
    expect((await s.browser.closed).code).toBe(1000);
  });

  it("passes acks on only up to the output the browser was sent (a client cannot widen the window)", async () => {
    const { user, host, pod, control } = await setup();
    const s = await openSession(user, host, control, pod.name);
    s.agent.ws.send(new Uint8Array(1000));
    await s.browser.until(() => s.browser.binary() === 1000, "the output");
    s.browser.ws.send(JSON.stringify({ type: "ack", bytes: 200_000 }));
    s.browser.ws.send(JSON.stringify({ type: "ack", bytes: 5 }));
    await s.agent.until(() => s.agent.texts().length >= 1, "the ack");
    await new Promise((r) => setTimeout(r, 100));
    expect(s.agent.texts()).toEqual([{ type: "ack", bytes: 1000 }]);
  });

  it("ends a session whose keystrokes pile up faster than the pod takes them, and bad frames", async () => {
    const { user, host, pod, control } = await setup();
    const s = await openSession(user, host, control, pod.name);
    const piece = new Uint8Array(64 * 1024);
    for (let sent = 0; sent <= TERMINAL_INPUT_BACKLOG_BYTES; sent += piece.byteLength)
      s.browser.ws.send(piece);
    const closed = await s.browser.closed;
    expect(closed.code).toBe(4400);
    expect(closed.reason).toContain("faster than the pod reads it");
    expect((await s.agent.closed).code).toBe(4400);

    const t = await openSession(user, host, control, pod.name);
    t.browser.ws.send(new Uint8Array(64 * 1024 + 1));
    expect((await t.browser.closed).code).toBe(4400);

    const u = await openSession(user, host, control, pod.name);
    u.browser.ws.send(JSON.stringify({ type: "resize", cols: 1e9, rows: 1 }));
    expect((await u.browser.closed).reason).toContain("unreadable");
  });

  it("input the pod took (input-ack) is not counted against the backlog", async () => {
    const { user, host, pod, control } = await setup();
    const s = await openSession(user, host, control, pod.name);
    const piece = new Uint8Array(64 * 1024);
    for (let i = 0; i < 40; i++) {
      s.browser.ws.send(piece);
      await s.agent.until(() => s.agent.binary() === (i + 1) * piece.byteLength, "the piece");
      s.agent.ws.send(JSON.stringify({ type: "input-ack", bytes: piece.byteLength }));
    }
    s.browser.ws.close(1000, "done");
    expect((await s.agent.closed).code).toBe(1000);
  });

  it("refuses, as an error message and close code 4000 + status, what the host refuses", async () => {
    const { user, pod, control } = await setup();
    const response = upgrade(pod.name, { token: user.token });
    const opening = await control.next("control:call");
    control.fail(
      opening,
      "rate_limited",
      `pod ${pod.name} already has 8 terminal sessions open; close one first`,
    );
    const res = await response;
    expect(res.status).toBe(101);
    const browser = collect(res.webSocket as WebSocket);
    const closed = await browser.closed;
    expect(closed.code).toBe(4429);
    expect(browser.texts()).toEqual([
      { type: "error", status: 429, error: expect.stringContaining("8 terminal sessions") },
    ]);
  });

  it("a pod that is not running is refused without asking its host", async () => {
    const [user, host] = await Promise.all([registerUser(), insertHost()]);
    const pod = await insertPod({ hostId: host.id, teamId: user.user.active_team_id, status: "stopped" });
    const { agent: control } = await FakeAgent.online(host, [{ name: pod.name, state: "stopped", ip: null }]);
    const res = await upgrade(pod.name, { token: user.token });
    const browser = collect(res.webSocket as WebSocket);
    expect((await browser.closed).code).toBe(4400);
    expect(browser.texts()[0].error).toContain("not running");
    await control.expectNone("control:call");
  });

  it("attacker: a foreign Origin is 403, even with the victim's cookie or a token", async () => {
    const { user, pod, control } = await setup();
    const login = await call("POST", "/api/auth/login", {
      email: user.user.email,
      password: "correct horse battery",
    });
    const cookie = String(login.headers.get("set-cookie")).split(";")[0];
    for (const origin of [
      `http://evil.${new URL(env.PUBLIC_URL).hostname}`,
      "https://attacker.example",
      "null",
    ]) {
      expect((await upgrade(pod.name, { cookie, origin })).status).toBe(403);
      expect((await upgrade(pod.name, { token: user.token, origin })).status).toBe(403);
    }
    await control.expectNone("control:call");
    // the dashboard's own origin with the cookie is let through to the host
    const response = upgrade(pod.name, { cookie, origin: OWN_ORIGIN });
    const opening = await control.next("control:call");
    control.fail(opening, "unavailable", "test: not opened");
    expect((await response).status).toBe(101);
  });

  it("attacker: without a credential 401, another team's pod 404, an unknown pod 404", async () => {
    const { user, pod, control } = await setup();
    const eve = await registerUser();
    expect((await upgrade(pod.name)).status).toBe(401);
    expect((await upgrade(pod.name, { origin: OWN_ORIGIN })).status).toBe(401);
    expect((await upgrade(pod.name, { token: eve.token })).status).toBe(404);
    expect((await upgrade("no-such-pod", { token: user.token })).status).toBe(404);
    await control.expectNone("control:call");
  });

  it("answers 426 without an upgrade and 400 for a size out of range", async () => {
    const { user, pod } = await setup();
    const plain = await call("GET", `/api/pods/${pod.name}/terminal`, undefined, { token: user.token });
    expect(plain.status).toBe(426);
    expect(plain.body.error).toContain("WebSocket");
    const res = await upgrade(pod.name, { token: user.token, query: "?cols=100000&rows=30" });
    expect(res.status).toBe(400);
  });
});

describe("GET /agent/terminal/{id}", () => {
  it("attacker: a host cannot join another host's session, nor without its token", async () => {
    const { user, host, pod, control } = await setup();
    const other = await insertHost();
    const response = upgrade(pod.name, { token: user.token });
    const opening = await control.next("control:call");
    const { relay } = opening.params as { relay: string };
    const as = (token: string | undefined) =>
      exports.default.fetch(
        new Request(`http://localhost/agent/terminal/${relay}`, {
          headers: { upgrade: "websocket", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        }),
      );
    expect((await as(other.token)).status).toBe(404);
    expect((await as(undefined)).status).toBe(401);
    expect((await as(user.token)).status).toBe(401);
    control.fail(opening, "unavailable", "test: not opened");
    await response;
    void host;
  });
});
