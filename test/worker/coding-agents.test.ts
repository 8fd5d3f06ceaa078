import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { CODING_AGENTS } from "../../shared/coding-agents";
import { FAIR_SHARE_LIMITS } from "../../worker/http/rate-limit";
import { runScheduledJobs, scheduledJobs } from "../../worker/scheduled";
import { INSTALL_DEADLINE_MS } from "../../worker/services/coding-agents/stuck";
import { type ControlCall, FakeAgent, podEventRecords, until } from "./support/agent";
import { call, registerUser } from "./support/client";
import { onlineWithPod } from "./support/pods";

/**
 * Coding agents, the Worker half (docs/coding-agents.md), against the real Worker in workerd: D1, the
 * HostAgent object, the pod-coding-agent Workflow, and the fake agent over the real WebSocket playing
 * the host's `pod.coding-agents.install` / `.remove`.
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };

const list = (as: As, pod: string) => call("GET", `/api/pods/${pod}/agents`, undefined, as);
const install = (as: As, pod: string, body: unknown) => call("POST", `/api/pods/${pod}/agents`, body, as);
const remove = (as: As, pod: string, slug: string) =>
  call("DELETE", `/api/pods/${pod}/agents/${slug}`, undefined, as);

async function nextCall(agent: FakeAgent, op: string, timeoutMs = 5_000): Promise<ControlCall> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe(op);
  return c;
}

type Listed = { slug: string; status: string; error_msg?: string; installed_at: string; version: string };

async function settled(as: As, pod: string, slug: string): Promise<Listed> {
  return until(
    async () => {
      const res = await list(as, pod);
      const a = (res.body.agents as Listed[]).find((x) => x.slug === slug);
      return a && a.status !== "installing" ? a : undefined;
    },
    `${slug} on ${pod} to settle`,
    10_000,
  );
}

const REPORT = { version: "0.169.0", command: "codex", nodeMajor: 20, pinned: false };

async function installed(s: { agent: FakeAgent; as: As; pod: { name: string } }, slug = "codex") {
  expect((await install(s.as, s.pod.name, { agent: slug })).status).toBe(202);
  s.agent.ok(await nextCall(s.agent, "pod.coding-agents.install"), { ...REPORT, command: slug });
  expect((await settled(s.as, s.pod.name, slug)).status).toBe("installed");
}

describe("the catalog", () => {
  it("lists every agent with slug, name and description, and what it installs; 401 without a credential", async () => {
    const { token } = await registerUser();
    const res = await call("GET", "/api/agents", undefined, { token });
    expect(res.status).toBe(200);
    expect(res.body.agents.map((a: { slug: string }) => a.slug)).toEqual(CODING_AGENTS.map((a) => a.slug));
    for (const a of res.body.agents)
      expect(a).toEqual({
        slug: expect.any(String),
        name: expect.any(String),
        description: expect.any(String),
        package: expect.any(String),
        command: expect.any(String),
        min_node: expect.any(Number),
      });
    expect(res.body.agents.find((a: { slug: string }) => a.slug === "codex")).toMatchObject({
      package: "@openai/codex",
      command: "codex",
    });
    expect((await call("GET", "/api/agents")).status).toBe(401);
  });
});

describe("install", () => {
  it("202 installing, the host gets the slug and version, then installed with what the host reported", async () => {
    const { pod, as, agent } = await onlineWithPod("nodejs");
    expect((await list(as, pod.name)).body).toEqual({ agents: [] });
    const res = await install(as, pod.name, { agent: "codex" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ slug: "codex", status: "installing" });
    const during = (await list(as, pod.name)).body.agents[0];
    expect(during).toMatchObject({ slug: "codex", status: "installing", version: "" });
    expect(during.installed_at).toMatch(/^\d{4}-\d\d-\d\dT/);

    const c = await nextCall(agent, "pod.coding-agents.install");
    expect(c.params).toEqual({ name: pod.name, agent: "codex", version: "latest" });
    agent.ok(c, REPORT);
    const done = await settled(as, pod.name, "codex");
    expect(done).toEqual({
      slug: "codex",
      status: "installed",
      installed_at: expect.any(String),
      version: "0.169.0",
      command: "codex",
      node_major: 20,
      node_pinned: false,
    });
    const events = await podEventRecords(pod.id);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["agent_install", "agent_installed"]));
    expect(events.find((e) => e.type === "agent_installed")?.message).toContain("0.169.0");
  });

  it("an exact version is passed on; a host failure ends in error with error_msg and an event; a retry is allowed", async () => {
    const { pod, as, agent } = await onlineWithPod("nodejs");
    expect((await install(as, pod.name, { agent: "auggie", version: "0.0.0-missing" })).status).toBe(202);
    const c = await nextCall(agent, "pod.coding-agents.install");
    expect(c.params).toMatchObject({ version: "0.0.0-missing" });
    agent.fail(c, "bad_request", "npm view failed: E404 No match found for version 0.0.0-missing");
    const failed = await settled(as, pod.name, "auggie");
    expect(failed).toMatchObject({
      status: "error",
      error_msg: "npm view failed: E404 No match found for version 0.0.0-missing",
    });
    const events = await podEventRecords(pod.id);
    expect(events.find((e) => e.type === "agent_install_failed")?.message).toContain("auggie install failed");
    expect(events.map((e) => e.type)).not.toContain("agent_installed");

    expect((await install(as, pod.name, { agent: "auggie" })).status).toBe(202);
    agent.ok(await nextCall(agent, "pod.coding-agents.install"), { ...REPORT, command: "auggie" });
    expect(await settled(as, pod.name, "auggie")).toMatchObject({ status: "installed" });
    expect((await list(as, pod.name)).body.agents).toHaveLength(1);
  });

  it("400 for an unknown agent, a bad version or a missing body, naming the field", async () => {
    const { pod, as } = await onlineWithPod("nodejs");
    const bad: [unknown, string][] = [
      [{ agent: "vim" }, "agent: must be one of"],
      [{ agent: "" }, "agent"],
      [{}, "agent"],
      [{ agent: ["codex"] }, "agent"],
      // attacker: anything npm would read as a range, URL, path or git spec
      [{ agent: "codex", version: "^1.0.0" }, "version"],
      [{ agent: "codex", version: "file:../../etc" }, "version"],
      [{ agent: "codex", version: "git+ssh://evil/x.git" }, "version"],
      [{ agent: "codex", version: "1.0.0 || latest" }, "version"],
      [{ agent: "codex", version: `1.0.0-${"a".repeat(100000)}` }, "version"],
      [{ agent: "codex", version: "--registry=http://evil" }, "version"],
    ];
    for (const [body, field] of bad) {
      const res = await install(as, pod.name, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error).toContain(field);
    }
    expect((await remove(as, pod.name, "vim")).status).toBe(400);
  });

  it("400 on a stopped pod; 409 while installing and once installed", async () => {
    const { pod, as, agent } = await onlineWithPod("nodejs");
    expect((await install(as, pod.name, { agent: "codex" })).status).toBe(202);
    const twice = await install(as, pod.name, { agent: "codex" });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toContain("already installing");
    agent.ok(await nextCall(agent, "pod.coding-agents.install"), REPORT);
    await settled(as, pod.name, "codex");
    const again = await install(as, pod.name, { agent: "codex" });
    expect(again.status).toBe(409);
    expect(again.body.error).toContain("already installed");

    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(pod.id).run();
    const stopped = await install(as, pod.name, { agent: "gemini-cli" });
    expect(stopped.status).toBe(400);
    expect(stopped.body.error).toContain("not running");
    const stoppedRemove = await remove(as, pod.name, "codex");
    expect(stoppedRemove.status).toBe(400);
    await agent.expectNone("control:call");
  });

  it("installs are rate limited per pod (fair share)", async () => {
    const { pod, as } = await onlineWithPod();
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(pod.id).run();
    const { perPod } = FAIR_SHARE_LIMITS.agents;
    for (let i = 0; i < perPod; i++)
      expect((await install(as, pod.name, { agent: "codex" })).status).toBe(400);
    const limited = await install(as, pod.name, { agent: "codex" });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
  });
});

describe("remove", () => {
  it("the host removes it, the row goes, agent_removed; 404 after; 409 while installing", async () => {
    const s = await onlineWithPod("nodejs");
    await installed(s);
    const pending = remove(s.as, s.pod.name, "codex");
    const c = await nextCall(s.agent, "pod.coding-agents.remove");
    expect(c.params).toEqual({ name: s.pod.name, agent: "codex" });
    s.agent.ok(c, { removed: true });
    const res = await pending;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "removed" });
    expect((await list(s.as, s.pod.name)).body).toEqual({ agents: [] });
    expect((await podEventRecords(s.pod.id)).at(-1)?.type).toBe("agent_removed");
    expect((await remove(s.as, s.pod.name, "codex")).status).toBe(404);

    expect((await install(s.as, s.pod.name, { agent: "opencode" })).status).toBe(202);
    const busy = await remove(s.as, s.pod.name, "opencode");
    expect(busy.status).toBe(409);
    expect(busy.body.error).toContain("installing");
  });

  it("a host failure keeps the row, and a retry asks the host again; deleting the pod drops its rows", async () => {
    const s = await onlineWithPod("nodejs");
    await installed(s);
    const pending = remove(s.as, s.pod.name, "codex");
    s.agent.fail(await nextCall(s.agent, "pod.coding-agents.remove"), "internal", "docker said no");
    expect((await pending).status).toBe(500);
    expect((await list(s.as, s.pod.name)).body.agents).toHaveLength(1);
    // asked again, the host is asked again (not answered the first failure from the journal)
    const again = remove(s.as, s.pod.name, "codex");
    s.agent.fail(await nextCall(s.agent, "pod.coding-agents.remove"), "internal", "docker said no again");
    expect((await again).body.error).toContain("again");

    const deleting = call("DELETE", `/api/pods/${s.pod.name}`, undefined, s.as);
    s.agent.ok(await nextCall(s.agent, "pod.delete"), { deleted: true });
    expect((await deleting).status).toBe(200);
    const rows = await env.DB.prepare("SELECT id FROM pod_coding_agents WHERE pod_id = ?")
      .bind(s.pod.id)
      .all();
    expect(rows.results).toEqual([]);
  });
});

describe("the stuck-agent-installs cron job", () => {
  it("ends an install left installing past the deadline in error, and leaves a younger one", async () => {
    const old = await onlineWithPod();
    const young = await onlineWithPod();
    for (const s of [old, young]) {
      expect((await install(s.as, s.pod.name, { agent: "codex" })).status).toBe(202);
      await nextCall(s.agent, "pod.coding-agents.install"); // the host never answers
    }
    const past = new Date(Date.now() - INSTALL_DEADLINE_MS - 60_000).toISOString();
    await env.DB.prepare("UPDATE pod_coding_agents SET updated_at = ? WHERE pod_id = ?")
      .bind(past, old.pod.id)
      .run();
    await runScheduledJobs(
      env,
      Date.now(),
      scheduledJobs.filter((j) => j.name === "stuck-agent-installs"),
    );
    expect((await list(old.as, old.pod.name)).body.agents[0]).toMatchObject({
      status: "error",
      error_msg: "it did not finish within 2 hours",
    });
    expect((await list(young.as, young.pod.name)).body.agents[0].status).toBe("installing");
  });
});

describe("another team", () => {
  it("404 on every pod route for another team's pod; the host is never asked", async () => {
    const s = await onlineWithPod("nodejs");
    await installed(s);
    const stranger = { token: (await registerUser()).token };
    const routes: [string, string, unknown?][] = [
      ["GET", `/api/pods/${s.pod.name}/agents`],
      ["POST", `/api/pods/${s.pod.name}/agents`, { agent: "gemini-cli" }],
      ["DELETE", `/api/pods/${s.pod.name}/agents/codex`],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, body, stranger);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    await s.agent.expectNone("control:call");
    expect((await list(s.as, s.pod.name)).body.agents).toHaveLength(1);
  });
});
