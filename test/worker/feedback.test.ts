import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { loggedPath } from "../../worker/http/middleware";
import { type ControlCall, FakeAgent, podEventRecords } from "./support/agent";
import { call, freshIp, registerUser } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * Visitor feedback, the Worker half (docs/feedback.md), against the real Worker in workerd: D1, the
 * HostAgent object and the fake agent over the real WebSocket playing the host's
 * `pod.feedback.set`. The public endpoints are called as a stranger's browser would (no
 * credentials, an Origin of the pod's site).
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };
type Setup = Awaited<ReturnType<typeof onlineWithPod>>;

const POD_ORIGIN = "https://site.pods.example.net";
const submitter = () => `v_${crypto.randomUUID().replaceAll("-", "")}`;

const settings = (as: As, pod: string, body: unknown) =>
  call("POST", `/api/pods/${pod}/feedback/settings`, body, as);
const list = (as: As, pod: string, query = "") =>
  call("GET", `/api/pods/${pod}/feedback${query}`, undefined, as);
const submit = (token: string, body: unknown, ip = freshIp()) =>
  call("POST", `/api/feedback/${token}`, body, { ip, headers: { origin: POD_ORIGIN } });
const mine = (token: string, who: string) =>
  call("GET", `/api/feedback/${token}/mine?submitter=${encodeURIComponent(who)}`, undefined, {
    headers: { origin: POD_ORIGIN },
  });

async function nextCall(agent: FakeAgent, op: string, timeoutMs = 5_000): Promise<ControlCall> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe(op);
  return c;
}

/** Changes the settings, the fake host rendering them; answers the reply and what the host got. */
async function configure(s: Setup, body: unknown) {
  const pending = settings(s.as, s.pod.name, body);
  const c = await nextCall(s.agent, "pod.feedback.set");
  s.agent.ok(c, { rendered: true });
  const res = await pending;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { body: res.body, params: c.params as { name: string; feedback: Record<string, unknown> } };
}

/** A pod collecting feedback (everyone), and its token. */
async function collecting() {
  const s = await onlineWithPod();
  const { body } = await configure(s, { enabled: true });
  return { ...s, token: body.token as string };
}

const comment = (extra: Record<string, unknown> = {}) => ({
  comment: "The signup button does nothing",
  name: "Grace",
  submitter_id: submitter(),
  page_path: "/signup",
  pin_selector: "main > form:nth-of-type(1) > button",
  pin_x: 412.5,
  pin_y: 980,
  viewport_w: 1280,
  viewport_h: 720,
  element_text: "Sign up",
  ...extra,
});

describe("settings", () => {
  it("a pod starts disabled, everyone, with a token and its share_url; enabling renders the vhost", async () => {
    const s = await onlineWithPod();
    const first = await list(s.as, s.pod.name);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({
      feedback: [],
      counts: { new: 0, read: 0, resolved: 0 },
      enabled: false,
      visibility: "everyone",
      total: 0,
      limit: 20,
      offset: 0,
    });
    const token = first.body.token as string;
    expect(token).toMatch(/^[0-9a-z]{32}$/);
    expect(first.body.share_url).toBe(`https://${s.pod.name}.${env.POD_DOMAIN}/?pod_feedback=${token}`);
    await s.agent.expectNone("control:call");

    const { body, params } = await configure(s, { enabled: true });
    expect(body).toEqual({ enabled: true, token, visibility: "everyone", share_url: first.body.share_url });
    expect(params).toEqual({
      name: s.pod.name,
      feedback: {
        enabled: true,
        visibility: "everyone",
        token,
        scriptUrl: new URL("/feedback/widget.js", env.PUBLIC_URL).toString(),
      },
    });
    const events = await podEventRecords(s.pod.id);
    const updated = events.find((e) => e.type === "feedback_updated");
    expect(JSON.parse(updated?.metadata ?? "{}")).toEqual({ enabled: true, visibility: "everyone" });
  });

  it("link visibility, then rotate: a new token, the old one 404 at once", async () => {
    const s = await collecting();
    const linked = await configure(s, { visibility: "link" });
    expect(linked.body).toMatchObject({ enabled: true, visibility: "link", token: s.token });
    expect(linked.params.feedback).toMatchObject({ visibility: "link", token: s.token });

    const rotated = await configure(s, { rotate: true });
    expect(rotated.body.token).not.toBe(s.token);
    expect(rotated.body.token).toMatch(/^[0-9a-z]{32}$/);
    expect(rotated.body.share_url).toContain(`?pod_feedback=${rotated.body.token}`);
    expect(rotated.params.feedback.token).toBe(rotated.body.token);
    expect((await submit(s.token, comment())).status).toBe(404);
    expect((await submit(rotated.body.token, comment())).status).toBe(201);
  });

  it("two changes at once compose, and the last settings the host gets are D1's", async () => {
    const s = await onlineWithPod();
    let finished = false;
    const both = Promise.all([
      settings(s.as, s.pod.name, { enabled: true }),
      settings(s.as, s.pod.name, { visibility: "link" }),
    ]).finally(() => {
      finished = true;
    });
    let last: Record<string, unknown> = {};
    while (!finished) {
      const c = await s.agent.next("control:call", 300).catch(() => undefined);
      if (!c) continue;
      expect(c.op).toBe("pod.feedback.set");
      last = (c.params as { feedback: Record<string, unknown> }).feedback;
      s.agent.ok(c, { rendered: true });
    }
    for (const res of await both) expect(res.status, JSON.stringify(res.body)).toBe(200);
    const stored = await list(s.as, s.pod.name);
    expect(stored.body).toMatchObject({ enabled: true, visibility: "link" });
    expect(last).toMatchObject({ enabled: true, visibility: "link", token: stored.body.token });
  });

  it("400 for a bad visibility or non-boolean flags; nothing reaches the host", async () => {
    const s = await onlineWithPod();
    for (const body of [{ visibility: "friends" }, { enabled: "yes" }, { rotate: 1 }, { visibility: null }]) {
      const res = await settings(s.as, s.pod.name, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatch(/visibility|enabled|rotate/);
    }
    await s.agent.expectNone("control:call");
  });

  it("a host that cannot render the vhost (a stopped pod): 500 and the settings rolled back", async () => {
    const s = await collecting();
    const pending = settings(s.as, s.pod.name, { visibility: "link", rotate: true });
    const c = await nextCall(s.agent, "pod.feedback.set");
    s.agent.fail(c, "internal", `pod ${s.pod.name} is not running: its web configuration cannot be rendered`);
    const res = await pending;
    expect(res.status).toBe(500);
    expect(res.body.error).toContain("cannot be rendered");
    const after = await list(s.as, s.pod.name);
    expect(after.body).toMatchObject({ enabled: true, visibility: "everyone", token: s.token });
    expect((await submit(s.token, comment())).status).toBe(201);
    const types = (await podEventRecords(s.pod.id)).filter((e) => e.type === "feedback_updated");
    expect(types).toHaveLength(1);
  });

  it("a pod whose host is not connected: 503, settings unchanged", async () => {
    const s = await collecting();
    s.agent.close();
    await s.agent.closed;
    const res = await settings(s.as, s.pod.name, { enabled: false });
    expect(res.status).toBe(503);
    expect((await list(s.as, s.pod.name)).body.enabled).toBe(true);
  });
});

describe("POST /api/feedback/{token} (public)", () => {
  it("201 with the stored comment, listed for the owner as new; CORS for any origin, no credentials", async () => {
    const s = await collecting();
    const sent = comment();
    const res = await submit(s.token, sent);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^fb_/),
      pod_name: s.pod.name,
      submitter_id: sent.submitter_id,
      name: "Grace",
      email: "",
      comment: sent.comment,
      page_path: "/signup",
      pin_selector: sent.pin_selector,
      pin_x: 412.5,
      pin_y: 980,
      viewport_w: 1280,
      viewport_h: 720,
      element_text: "Sign up",
      status: "new",
      created_at: expect.any(String),
    });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();

    const owner = await list(s.as, s.pod.name);
    expect(owner.body.feedback).toEqual([res.body]);
    expect(owner.body.counts).toEqual({ new: 1, read: 0, resolved: 0 });
  });

  it("answers the widget's preflight", async () => {
    const res = await exports.default.fetch(`http://localhost/api/feedback/${"a".repeat(32)}`, {
      method: "OPTIONS",
      headers: {
        origin: POD_ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    expect(res.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("content-type");
    // the owner's routes get no CORS
    const owner = await exports.default.fetch("http://localhost/api/pods/x0/feedback", {
      headers: { origin: POD_ORIGIN },
    });
    expect(owner.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("404 for an unknown token, a disabled collection and a deleted pod, indistinguishably", async () => {
    const s = await collecting();
    const unknown = await submit("0123456789abcdefghjkmnpqrstvwxyz", comment());
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("access-control-allow-origin")).toBe("*");
    await configure(s, { enabled: false });
    const disabled = await submit(s.token, comment());
    expect(disabled.status).toBe(404);
    expect(disabled.body).toEqual(unknown.body);
    expect((await mine(s.token, submitter())).body).toEqual(unknown.body);
    // never configured: the token a GET made is not collecting either
    const other = await onlineWithPod();
    const fresh = (await list(other.as, other.pod.name)).body.token;
    expect((await submit(fresh, comment())).status).toBe(404);

    await configure(s, { enabled: true });
    expect((await submit(s.token, comment())).status).toBe(201);
    const deleting = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
    s.agent.ok(await nextCall(s.agent, "pod.delete"), { deleted: true });
    expect((await deleting).status).toBe(200);
    expect((await submit(s.token, comment())).body).toEqual(unknown.body);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM feedback WHERE pod_id = ?")
      .bind(s.pod.id)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });

  it("400 naming the problem for what a comment may not be", async () => {
    const s = await collecting();
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ comment: undefined }, /comment/],
      [{ comment: "   " }, /comment/],
      [{ comment: 42 }, /comment/],
      [{ name: undefined, email: undefined }, /name or email/],
      [{ name: "  ", email: "" }, /name or email/],
      [{ name: undefined, email: "not-an-email" }, /email/],
      [{ email: "a@b" }, /email/],
      [{ email: "a b@example.com" }, /email/],
      [{ email: "a@@example.com" }, /email/],
      [{ submitter_id: "" }, /submitter_id/],
      [{ submitter_id: "has spaces in it, sixteen+" }, /submitter_id/],
      [{ submitter_id: "v<script>" }, /submitter_id/],
      [{ submitter_id: "ü-visitor" }, /submitter_id/],
      [{ page_path: "https://evil.example/" }, /page_path/],
      [{ pin_x: "12" }, /pin_x/],
      [{ pin_y: 1e12 }, /pin_y/],
      [{ viewport_w: 1.5 }, /viewport_w/],
      [{ viewport_h: -1 }, /viewport_h/],
    ];
    for (const [change, field] of bad) {
      const res = await submit(s.token, comment(change));
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect(res.body.error, JSON.stringify(change)).toMatch(field);
    }
    const malformed = await call("POST", `/api/feedback/${s.token}`, undefined, { raw: "{not json" });
    expect(malformed.status).toBe(400);
    expect((await list(s.as, s.pod.name)).body.counts.new).toBe(0);
    // an email alone is enough; so is a name alone (the first test)
    const byEmail = await submit(s.token, comment({ name: undefined, email: "grace@example.com" }));
    expect(byEmail.status, JSON.stringify(byEmail.body)).toBe(201);
    expect(byEmail.body).toMatchObject({ name: "", email: "grace@example.com" });
    // without a submitter_id one is made, usable with /mine
    const anonymous = await submit(s.token, comment({ submitter_id: undefined }));
    expect(anonymous.body.submitter_id).toMatch(/^sub_[0-9a-z]{24}$/);
    expect((await mine(s.token, anonymous.body.submitter_id)).body.feedback).toHaveLength(1);
  });

  it("caps: each field at its limit passes, one more is 400; a body past 32 KiB is 413", async () => {
    const s = await collecting();
    const atCap = comment({
      comment: "c".repeat(5000),
      name: "n".repeat(100),
      email: `${"e".repeat(64)}@${"d".repeat(180)}.example`,
      page_path: `/${"p".repeat(2047)}`,
      pin_selector: "s".repeat(1000),
      element_text: "t".repeat(500),
    });
    expect((await submit(s.token, atCap)).status).toBe(201);
    for (const [field, value] of [
      ["comment", "c".repeat(5001)],
      ["name", "n".repeat(101)],
      ["email", `${"e".repeat(250)}@x.example`],
      ["page_path", `/${"p".repeat(2048)}`],
      ["pin_selector", "s".repeat(1001)],
      ["element_text", "t".repeat(501)],
      ["submitter_id", "s".repeat(65)],
    ] as const) {
      const res = await submit(s.token, comment({ [field]: value }));
      expect(res.status, field).toBe(400);
      expect(res.body.error).toContain(field);
    }
    const huge = await call("POST", `/api/feedback/${s.token}`, undefined, {
      raw: JSON.stringify({ ...comment(), padding: "x".repeat(40 * 1024) }),
    });
    expect(huge.status).toBe(413);
    expect((await list(s.as, s.pod.name)).body.counts.new).toBe(1);
  });

  it("rate limited per IP: the 11th comment in 10 minutes is 429 with Retry-After; another IP goes on", async () => {
    const s = await collecting();
    const ip = freshIp();
    for (let i = 0; i < 10; i++) expect((await submit(s.token, comment(), ip)).status).toBe(201);
    const limited = await submit(s.token, comment(), ip);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get("access-control-allow-origin")).toBe("*");
    expect((await submit(s.token, comment())).status).toBe(201);
  });

  it("an attacker's markup is stored and answered as data, never interpreted", async () => {
    const s = await collecting();
    const hostile = '<script>alert(document.cookie)</script><img src=x onerror="alert(1)">';
    const res = await submit(s.token, comment({ comment: hostile, name: hostile, element_text: hostile }));
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.body.comment).toBe(hostile);
    const owner = await list(s.as, s.pod.name);
    expect(owner.body.feedback[0].name).toBe(hostile);
  });
});

describe("GET /api/feedback/{token}/mine (public)", () => {
  it("takes the spec's submitter_id as the plain string it is: a 14-character id and a 1-character one", async () => {
    const s = await collecting();
    for (const id of ["visitor-000042", "7"]) {
      const sent = await submit(s.token, comment({ submitter_id: id, comment: `from ${id}` }));
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      expect(sent.body.submitter_id).toBe(id);
      const res = await mine(s.token, id);
      expect(res.status).toBe(200);
      expect(res.body.feedback.map((f: { comment: string }) => f.comment)).toEqual([`from ${id}`]);
    }
  });

  it("only that submitter's comments on that pod, newest first", async () => {
    const s = await collecting();
    const other = await collecting();
    const me = submitter();
    const a = await submit(s.token, comment({ submitter_id: me, comment: "first" }));
    const b = await submit(s.token, comment({ submitter_id: me, comment: "second" }));
    await submit(s.token, comment({ comment: "someone else's" }));
    await submit(other.token, comment({ submitter_id: me, comment: "on another pod" }));
    const res = await mine(s.token, me);
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.body.feedback.map((f: { id: string }) => f.id)).toEqual([b.body.id, a.body.id]);
    expect((await mine(s.token, submitter())).body).toEqual({ feedback: [] });
  });

  it("400 for a submitter that is missing or not an id", async () => {
    const s = await collecting();
    expect((await call("GET", `/api/feedback/${s.token}/mine`)).status).toBe(400);
    for (const who of ["", "x".repeat(65), "'; DROP TABLE feedback; --aaaaaaaa", "a b"]) {
      const res = await mine(s.token, who);
      expect(res.status, who).toBe(400);
      expect(res.body.error).toContain("submitter");
    }
  });
});

describe("owner triage", () => {
  it("status filter with counts that ignore it; PATCH status; DELETE", async () => {
    const s = await collecting();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await submit(s.token, comment({ comment: `c${i}` }))).body.id);
    const [c0, c1, c2] = ids as [string, string, string, string];
    const patch = (id: string, status: string) =>
      call("PATCH", `/api/pods/${s.pod.name}/feedback/${id}`, { status }, s.as);
    expect((await patch(c0, "read")).body).toEqual({ ok: true });
    expect((await patch(c1, "resolved")).body).toEqual({ ok: true });
    expect((await patch(c2, "resolved")).status).toBe(200);
    expect((await patch(c2, "new")).status).toBe(200);

    const resolved = await list(s.as, s.pod.name, "?status=resolved");
    expect(resolved.body.feedback.map((f: { id: string }) => f.id)).toEqual([c1]);
    expect(resolved.body.counts).toEqual({ new: 2, read: 1, resolved: 1 });
    expect(resolved.body.total).toBe(1);
    const fresh = await list(s.as, s.pod.name, "?status=new");
    expect(fresh.body.feedback).toHaveLength(2);
    const page = await list(s.as, s.pod.name, "?limit=2&offset=1");
    expect(page.body).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect(page.body.feedback.map((f: { comment: string }) => f.comment)).toEqual(["c2", "c1"]);

    expect((await list(s.as, s.pod.name, "?status=open")).status).toBe(400);
    expect((await patch(c0, "done")).status).toBe(400);

    const gone = await call("DELETE", `/api/pods/${s.pod.name}/feedback/${c0}`, undefined, s.as);
    expect(gone.body).toEqual({ ok: true });
    expect((await call("DELETE", `/api/pods/${s.pod.name}/feedback/${c0}`, undefined, s.as)).status).toBe(
      404,
    );
    expect((await list(s.as, s.pod.name)).body.counts).toEqual({ new: 2, read: 0, resolved: 1 });
  });

  it("404 for an id of another pod, of the same team or another's; another team's pod is 404 throughout", async () => {
    const s = await collecting();
    const theirs = await submit(s.token, comment());
    const mineToo = await onlineWithPod();
    const sameTeamOther = await call(
      "PATCH",
      `/api/pods/${mineToo.pod.name}/feedback/${theirs.body.id}`,
      { status: "read" },
      mineToo.as,
    );
    expect(sameTeamOther.status).toBe(404);

    const stranger = { token: (await registerUser()).token };
    const routes: [string, string, unknown?][] = [
      ["GET", `/api/pods/${s.pod.name}/feedback`],
      ["POST", `/api/pods/${s.pod.name}/feedback/settings`, { enabled: false }],
      ["PATCH", `/api/pods/${s.pod.name}/feedback/${theirs.body.id}`, { status: "read" }],
      ["DELETE", `/api/pods/${s.pod.name}/feedback/${theirs.body.id}`],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, stranger);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain(s.token);
    }
    await s.agent.expectNone("control:call");
    const owner = await list(s.as, s.pod.name);
    expect(owner.body).toMatchObject({ enabled: true, counts: { new: 1, read: 0, resolved: 0 } });
    expect((await call("GET", `/api/pods/${s.pod.name}/feedback`)).status).toBe(401);
  });
});

describe("the token in the path", () => {
  it("is redacted from the request log", () => {
    const token = "0123456789abcdefghjkmnpqrstvwxyz";
    expect(loggedPath(`/api/feedback/${token}`)).toBe("/api/feedback/[redacted]");
    expect(loggedPath(`/api/feedback/${token}/mine`)).toBe("/api/feedback/[redacted]/mine");
    expect(loggedPath("/api/pods/site/feedback/settings")).toBe("/api/pods/site/feedback/settings");
  });
});

describe("GET /feedback/widget.js", () => {
  it("public, cacheable JavaScript that renders text only", async () => {
    const res = await exports.default.fetch("http://localhost/feedback/widget.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/javascript; charset=utf-8");
    expect(res.headers.get("cache-control")).toContain("public");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const script = await res.text();
    expect(script.length).toBeLessThan(16 * 1024);
    expect(script).toContain("data-pod-feedback");
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
    expect(script).toContain('credentials: "omit"');
  });
});
