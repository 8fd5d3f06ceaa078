import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, signUp } from "./support/api";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * Coding agents end to end (docs/coding-agents.md): the public API of the Worker in workerd, the
 * pod-coding-agent workflow, the agent fetching the package from the real npm registry on the host
 * (the pods cannot reach it), and the install in a Node.js pod on the real engine. The catalog's
 * smallest agent that really runs, Auggie (~13 MB), is installed, its `--version` runs through the
 * command runner, and it is removed; a static pod gets it pinned to a Node beside its runtime. A
 * version the registry does not have ends `error` with npm's reason; a stopped pod is refused. A credential file planted where the agent's sign-in would
 * write it never shows in the API's events, agent records or logs.
 */

const POD = "cag-app";
const SITE = "cag-site";
const SECRET = "podhost-e2e-credential-7f3a9c";

type Listed = { slug: string; status: string; error_msg?: string; version: string; command: string };

describe("coding agents end to end", () => {
  let stack: Stack;
  let api: ApiClient;
  const bodies: string[] = [];

  const exec = async (command: string[]) => {
    const res = await api.post(`/api/pods/${POD}/exec`, { command, timeout_s: 60 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    bodies.push(JSON.stringify(res.body));
    return res.body as { exit_code: number | null; stdout: string; stderr: string };
  };

  const settled = (slug: string, timeoutMs = 300_000, pod = POD) =>
    waitFor(
      `${slug} to settle`,
      async () => {
        const res = await api.get(`/api/pods/${pod}/agents`);
        bodies.push(JSON.stringify(res.body));
        const a = (res.body.agents as Listed[]).find((x) => x.slug === slug);
        return a && a.status !== "installing" ? a : undefined;
      },
      timeoutMs,
    );

  beforeAll(async () => {
    stack = await startStack("cag");
    api = (await signUp(stack.api)).api;
    await waitForHostOnline(api);
    for (const [name, preset] of [
      [POD, "nodejs"],
      [SITE, "static"],
    ]) {
      const pod = await api.post("/api/pods", { name, preset });
      expect(pod.status, JSON.stringify(pod.body)).toBe(202);
    }
    await waitForPodStatus(api, POD, "running", 120_000);
    await waitForPodStatus(api, SITE, "running", 120_000);
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
  }, 120_000);

  it("the catalog lists real agents with their npm packages", async () => {
    const res = await api.get("/api/agents");
    expect(res.status).toBe(200);
    expect(res.body.agents).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ slug: "claude-code", package: "@anthropic-ai/claude-code" }),
        expect.objectContaining({ slug: "auggie", package: "@augmentcode/auggie", command: "auggie" }),
      ]),
    );
  });

  it("installs Auggie into the Node.js pod: installing, then installed; --version runs through exec", async () => {
    // what a sign-in would leave in the pod: it must never come out through the API
    await exec([
      "sh",
      "-c",
      `mkdir -p ~/.augment && echo '{"accessToken":"${SECRET}"}' > ~/.augment/session.json`,
    ]);
    const res = await api.post(`/api/pods/${POD}/agents`, { agent: "auggie" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ slug: "auggie", status: "installing" });
    expect((await api.post(`/api/pods/${POD}/agents`, { agent: "auggie" })).status).toBe(409);

    const done = await settled("auggie");
    expect(done, JSON.stringify(done)).toMatchObject({ status: "installed", command: "auggie" });
    expect(done.version).toMatch(/^\d+\.\d+\.\d+/);

    const v = await exec(["auggie", "--version"]);
    expect(v.exit_code, v.stderr).toBe(0);
    expect(v.stdout).toContain(done.version);
  }, 360_000);

  it("a static pod gets the Node the agent needs beside its runtime (pinned)", async () => {
    const res = await api.post(`/api/pods/${SITE}/agents`, { agent: "auggie" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const done = await settled("auggie", 300_000, SITE);
    expect(done, JSON.stringify(done)).toMatchObject({
      status: "installed",
      node_major: 20,
      node_pinned: true,
    });
    const v = await api.post(`/api/pods/${SITE}/exec`, {
      command: ["/home/pod_user/.npm-global/bin/auggie", "--version"],
    });
    expect(v.status).toBe(200);
    expect(v.body.exit_code, v.body.stderr).toBe(0);
    expect(v.body.stdout).toContain(done.version);
  }, 360_000);

  it("a version the registry does not have ends error with npm's reason", async () => {
    const res = await api.post(`/api/pods/${POD}/agents`, {
      agent: "codex",
      version: "0.0.0-podhost-missing",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const failed = await settled("codex", 120_000);
    expect(failed.status).toBe("error");
    expect(failed.error_msg).toMatch(/0\.0\.0-podhost-missing/);
    expect(failed.error_msg).toMatch(/E404|No match/);
  }, 180_000);

  it("removes Auggie: 200 removed, the command is gone; events for install, failure and removal", async () => {
    const res = await api.delete(`/api/pods/${POD}/agents/auggie`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "removed" });
    const gone = await exec(["sh", "-c", "command -v auggie || echo none"]);
    expect(gone.stdout.trim()).toBe("none");
    expect((await api.delete(`/api/pods/${POD}/agents/auggie`)).status).toBe(404);
    // the failed one is removed too (nothing of it was placed)
    expect((await api.delete(`/api/pods/${POD}/agents/codex`)).status).toBe(200);
    expect((await api.get(`/api/pods/${POD}/agents`)).body).toEqual({ agents: [] });

    const events = await api.get(`/api/pods/${POD}/events?limit=100`);
    const types = (events.body.events as { type: string }[]).map((e) => e.type);
    expect(types).toEqual(
      expect.arrayContaining(["agent_install", "agent_installed", "agent_install_failed", "agent_removed"]),
    );
    bodies.push(JSON.stringify(events.body));
  }, 120_000);

  it("the planted credential never leaves the pod through events, agent records or logs", async () => {
    for (const source of ["app", "web", "error", "build"]) {
      const logs = await api.get(`/api/pods/${POD}/logs?source=${source}&lines=1000`);
      bodies.push(JSON.stringify(logs.body));
    }
    // every answer read so far (agent records, events, logs, exec output), none holding it
    expect(bodies.length).toBeGreaterThan(5);
    expect(bodies.filter((b) => b.includes(SECRET))).toEqual([]);
    // the file is still the user's, in the pod
    const still = await exec(["cat", "/home/pod_user/.augment/session.json"]);
    expect(still.stdout).toContain(SECRET);
  });

  it("400 on a stopped pod", async () => {
    expect((await api.post(`/api/pods/${POD}/stop`)).status).toBe(200);
    const res = await api.post(`/api/pods/${POD}/agents`, { agent: "auggie" });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("not running");
  });
});
