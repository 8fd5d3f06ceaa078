import { env } from "cloudflare:workers";
import { sign } from "@octokit/webhooks-methods";
import { afterEach, describe, expect, it } from "vitest";
import { FAIR_SHARE_LIMITS } from "../../worker/http/rate-limit";
import { REPO_LOOKUP_LIMITS } from "../../worker/http/repo-lookup-limit";
import { sha256Hex } from "../../worker/lib/crypto";
import type { RecordedRequest } from "../support/repohost";
import { type ControlCall, FakeAgent, insertHost, podEventRecords, until } from "./support/agent";
import { call, freshIp, registerUser } from "./support/client";
import { onlineWithPod, running } from "./support/pods";

/**
 * Git deployments (docs/git.md) against the real Worker in workerd: D1, the HostAgent object, the
 * pod-deploy Workflow, the fake agent over the real WebSocket answering `pod.deploy` & co., and the
 * git host's REST double (test/support/repohost.ts) for hooks and commit statuses.
 */

afterEach(() => FakeAgent.closeAll());

type As = { token: string };
const TOKEN = "ghp_TestSecretToken0123456789abcdef";
const sha = (n: number) => n.toString(16).padStart(40, "a");
let repoCounter = 0;
/** A hosted repository no other test uses, so the double's record can be filtered by it. */
const newRepo = (owner = "acme") => {
  const name = `site-${crypto.randomUUID().slice(0, 8)}-${++repoCounter}`;
  return { owner, name, url: `https://github.com/${owner}/${name}.git`, path: `/repos/${owner}/${name}` };
};

const doubleRequests = async (repoPath: string): Promise<RecordedRequest[]> =>
  ((await (await fetch(`${env.GITHUB_API_BASE}/__double/requests`)).json()) as RecordedRequest[]).filter(
    (r) => r.path.startsWith(repoPath),
  );

async function connected(body: Record<string, unknown> = {}, preset = "static") {
  const setup = await onlineWithPod(preset);
  const repo = newRepo();
  const res = await call(
    "POST",
    `/api/pods/${setup.pod.name}/git`,
    { repo_url: repo.url, auth_token: TOKEN, ...body },
    setup.as,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { ...setup, repo, git: res.body };
}

const okOutcome = (call: ControlCall, n: number, kept: string[] = []) => ({
  ok: true,
  commit: { sha: sha(n), message: `commit ${n}` },
  release: (call.params as { deploymentId: string }).deploymentId,
  detected: { preset: "static", install_command: null, build_command: null, start_command: null, port: 8080 },
  kept: [(call.params as { deploymentId: string }).deploymentId, ...kept],
});

const deployment = (as: As, pod: string, id: string) =>
  call("GET", `/api/pods/${pod}/git/deployments/${id}`, undefined, as);

async function settled(as: As, pod: string, id: string) {
  return until(
    async () => {
      const res = await deployment(as, pod, id);
      return res.body.status !== "deploying" ? res.body : undefined;
    },
    `deployment ${id} to end`,
    10_000,
  );
}

async function nextCall(agent: FakeAgent, op: string, timeoutMs = 15_000): Promise<ControlCall> {
  const c = await agent.next("control:call", timeoutMs);
  expect(c.op).toBe(op);
  return c;
}

/** Deploys and succeeds; returns the deployment id. */
async function deployOnce(
  s: { agent: FakeAgent; as: As; pod: { name: string } },
  n: number,
  kept: string[] = [],
): Promise<string> {
  const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const c = await nextCall(s.agent, "pod.deploy");
  s.agent.ok(c, okOutcome(c, n, kept));
  expect((await settled(s.as, s.pod.name, res.body.id)).status).toBe("success");
  return res.body.id;
}

describe("connect, update, disconnect", () => {
  it("connects: the push hook is created with a secret, the token is stored encrypted and never shown", async () => {
    const { pod, as, repo, git } = await connected({ branch: "prod", build_command: "npm run build" });
    expect(git).toMatchObject({
      repo_url: repo.url,
      branch: "prod",
      auto_deploy: true,
      build_command: "npm run build",
      last_deployment: null,
      webhook: { auto: true, note: null },
      webhook_url: `http://localhost:8787/api/webhooks/git/${pod.name}`,
    });
    expect(git.webhook_secret).toMatch(/^whs_/);

    const [hook] = await doubleRequests(`${repo.path}/hooks`);
    expect(hook).toMatchObject({
      method: "POST",
      authorization: `Bearer ${TOKEN}`,
      body: {
        events: ["push"],
        active: true,
        config: {
          url: "http://localhost:8787/api/webhooks/repohost",
          content_type: "json",
          secret: git.webhook_secret,
        },
      },
    });

    const row = await env.DB.prepare("SELECT * FROM git_configs WHERE pod_id = ?").bind(pod.id).first();
    expect(JSON.stringify(row)).not.toContain(TOKEN);
    expect(JSON.stringify(row)).not.toContain(git.webhook_secret);
    expect(row?.token_encrypted).toMatch(/^v2\./);

    const read = await call("GET", `/api/pods/${pod.name}/git`, undefined, as);
    expect(read.status).toBe(200);
    expect(read.body.webhook_secret).toBeUndefined();
    expect(JSON.stringify(read.body)).not.toContain(TOKEN);
    expect(JSON.stringify(git)).not.toContain(TOKEN);
    const events = await podEventRecords(pod.id);
    expect(events.map((e) => e.type)).toContain("git_connected");
    expect(JSON.stringify(events)).not.toContain(TOKEN);
  });

  it("reveals the webhook secret only when asked for it, to the pod's team, while connected", async () => {
    const { pod, as, git } = await connected();
    const read = await call("GET", `/api/pods/${pod.name}/git`, undefined, as);
    expect(JSON.stringify(read.body)).not.toContain(git.webhook_secret);
    const reveal = await call("GET", `/api/pods/${pod.name}/git/webhook-secret`, undefined, as);
    expect(reveal.status).toBe(200);
    expect(reveal.body).toEqual({ webhook_url: git.webhook_url, webhook_secret: git.webhook_secret });
    const eve = await registerUser("Eve");
    const foreign = await call("GET", `/api/pods/${pod.name}/git/webhook-secret`, undefined, {
      token: eve.token,
    });
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).not.toContain(git.webhook_secret);
    expect((await call("DELETE", `/api/pods/${pod.name}/git`, undefined, as)).status).toBe(200);
    const gone = await call("GET", `/api/pods/${pod.name}/git/webhook-secret`, undefined, as);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatch(/no repository is connected/);
  });

  it("409 when a repository is already connected; a repository without token gets no hook and says why", async () => {
    const { pod, as } = await onlineWithPod();
    const repo = newRepo();
    const first = await call("POST", `/api/pods/${pod.name}/git`, { repo_url: repo.url }, as);
    expect(first.status).toBe(201);
    expect(first.body.webhook.auto).toBe(false);
    expect(first.body.webhook.note).toContain("auth_token");
    expect(await doubleRequests(repo.path)).toEqual([]);
    const again = await call("POST", `/api/pods/${pod.name}/git`, { repo_url: newRepo().url }, as);
    expect(again.status).toBe(409);
    expect(again.body.error).toContain("already connected");
  });

  it("a hook the git host refuses leaves the connect working, with the reason", async () => {
    const { pod, as } = await onlineWithPod();
    const repo = newRepo("locked");
    const res = await call(
      "POST",
      `/api/pods/${pod.name}/git`,
      { repo_url: repo.url, auth_token: TOKEN },
      as,
    );
    expect(res.status).toBe(201);
    expect(res.body.webhook).toMatchObject({ auto: false, note: expect.stringContaining("403") });
    expect(res.body.webhook.note).not.toContain(TOKEN);
  });

  it("400 for a bad URL, credentials in it, a bad branch, a pod that is not running", async () => {
    const { pod, as } = await onlineWithPod();
    const cases: [Record<string, unknown>, string][] = [
      [{ repo_url: "http://github.com/acme/site.git" }, "repo_url"],
      [{ repo_url: "git@github.com:acme/site.git" }, "repo_url"],
      [{ repo_url: "https://user:pw@github.com/acme/site.git" }, "auth_token"],
      [{ repo_url: "https://ghp_x@github.com/acme/site.git" }, "credentials"],
      [{ repo_url: "https://github.com/acme/site.git", branch: "-rf" }, "branch"],
      [{ repo_url: "https://github.com/acme/site.git", branch: "a..b" }, "branch"],
      [{ repo_url: "https://github.com/acme/site.git", build_command: "a\nb" }, "build_command"],
      [{}, "repo_url"],
    ];
    for (const [body, field] of cases) {
      const res = await call("POST", `/api/pods/${pod.name}/git`, body, as);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error, JSON.stringify(body)).toContain(field);
    }
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(pod.id).run();
    const stopped = await call("POST", `/api/pods/${pod.name}/git`, { repo_url: newRepo().url }, as);
    expect(stopped.status).toBe(400);
    expect(stopped.body.error).toContain("not running");
  });

  it("accepts http:// for a loopback host when ALLOW_HTTP_GIT_LOOPBACK is on", async () => {
    const { pod, as } = await onlineWithPod();
    const res = await call(
      "POST",
      `/api/pods/${pod.name}/git`,
      { repo_url: "http://127.0.0.1:9418/site.git" },
      as,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.webhook.note).toContain("generic webhook");
  });

  it("PUT changes only the given fields; DELETE removes the hook and the configuration", async () => {
    const { pod, as, repo } = await connected({ build_command: "make" });
    const put = await call("PUT", `/api/pods/${pod.name}/git`, { auto_deploy: false }, as);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ branch: "main", build_command: "make", auto_deploy: false });
    const put2 = await call("PUT", `/api/pods/${pod.name}/git`, { branch: "dev", build_command: "" }, as);
    expect(put2.body).toMatchObject({ branch: "dev", build_command: "", auto_deploy: false });
    expect((await call("PUT", `/api/pods/${pod.name}/git`, { branch: "bad..name" }, as)).status).toBe(400);

    const del = await call("DELETE", `/api/pods/${pod.name}/git`, undefined, as);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ status: "disconnected", webhook_removed: true });
    const hookCalls = await doubleRequests(`${repo.path}/hooks`);
    expect(hookCalls.map((r) => r.method)).toEqual(["POST", "DELETE"]);
    expect(hookCalls[1]?.path).toMatch(/\/hooks\/\d+$/);
    expect(hookCalls[1]?.authorization).toBe(`Bearer ${TOKEN}`);
    expect((await call("GET", `/api/pods/${pod.name}/git`, undefined, as)).body).toBeNull();
    expect((await call("DELETE", `/api/pods/${pod.name}/git`, undefined, as)).status).toBe(404);
    expect((await podEventRecords(pod.id)).map((e) => e.type)).toContain("git_disconnected");
  });
});

describe("deleting the pod", () => {
  it("deletes the repository's push hook at the git host too, and the configuration", async () => {
    const { pod, as, repo, agent } = await connected();
    const del = call("DELETE", `/api/pods/${pod.name}`, undefined, as);
    const c = await nextCall(agent, "pod.delete");
    agent.ok(c, { deleted: true });
    expect((await del).status).toBe(200);
    const hookCalls = await doubleRequests(`${repo.path}/hooks`);
    expect(hookCalls.map((r) => r.method)).toEqual(["POST", "DELETE"]);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM git_configs WHERE pod_id = ?")
      .bind(pod.id)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});

describe("deploy", () => {
  it("202 deploying; the host gets pod.deploy with the decrypted token; success is recorded, logged and reported", async () => {
    const s = await connected({ build_command: "npm run build" });
    const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^dep_/),
      status: "deploying",
      trigger: "manual",
    });
    expect(res.body.created_at).toEqual(expect.any(String));

    const c = await nextCall(s.agent, "pod.deploy");
    expect(c.idempotencyKey).toBe(`${res.body.id}:deploy on host`);
    expect(c.params).toEqual({
      name: s.pod.name,
      deploymentId: res.body.id,
      source: { url: s.repo.url, branch: "main", token: TOKEN },
      preset: "static",
      buildCommand: "npm run build",
      // the whole of a Launch pod's daily build budget is left: the deploy's time limit on the host
      timeoutMs: 30 * 60_000,
    });
    const log = (seq: number, chunk: string) =>
      s.agent.send({ type: "agent:deploy-log", deploymentId: res.body.id, seq, chunk });
    log(0, "Cloning...\n");
    log(1, "npm run build\n");
    log(1, "npm run build\n"); // sent again after a reconnect: stored once
    await until(
      async () => (await deployment(s.as, s.pod.name, res.body.id)).body.build_log.includes("build"),
      "log",
    );
    s.agent.ok(c, okOutcome(c, 1));

    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done).toMatchObject({
      status: "success",
      commit_sha: sha(1),
      commit_message: "commit 1",
      build_log: "Cloning...\nnpm run build\n",
      failure: null,
    });
    expect(done.finished_at).toEqual(expect.any(String));
    const events = await podEventRecords(s.pod.id);
    expect(events.filter((e) => e.type === "deployment")).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain(TOKEN);
    // commit unknown before the fetch: no pending, the result reported on the fetched commit
    const statuses = await until(async () => {
      const r = await doubleRequests(`${s.repo.path}/statuses`);
      return r.length > 0 ? r : undefined;
    }, "status");
    expect(statuses).toHaveLength(1);
    expect(statuses[0]).toMatchObject({
      path: `${s.repo.path}/statuses/${sha(1)}`,
      authorization: `Bearer ${TOKEN}`,
      body: { state: "success", context: "podhost/deploy" },
    });

    const list = await call("GET", `/api/pods/${s.pod.name}/git/deployments`, undefined, s.as);
    expect(list.body.deployments).toHaveLength(1);
    expect(list.body.deployments[0].build_log).toBeUndefined();
    const git = await call("GET", `/api/pods/${s.pod.name}/git`, undefined, s.as);
    expect(git.body.last_deployment).toMatchObject({ id: res.body.id, status: "success" });
  });

  it("a failed deploy ends failed with the agent's class in a deploy_failed event", async () => {
    const s = await connected();
    const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, {
      ok: false,
      class: "build_script",
      message: "npm run build exited 1",
      commit: { sha: sha(7), message: "broken" },
    });
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done).toMatchObject({
      status: "failed",
      commit_sha: sha(7),
      failure: { class: "build_script", message: "npm run build exited 1" },
    });
    const events = await podEventRecords(s.pod.id);
    const failed = events.filter((e) => e.type === "deploy_failed");
    expect(failed).toHaveLength(1);
    expect(JSON.parse(failed[0]?.metadata ?? "{}")).toMatchObject({ class: "build_script" });
    expect(events.some((e) => e.type === "deployment")).toBe(false);
    await until(async () => {
      const r = await doubleRequests(`${s.repo.path}/statuses/${sha(7)}`);
      return r.some((x) => (x.body as { state: string }).state === "failure");
    }, "failure status");
  });

  it("a failure the agent did not classify is class unknown", async () => {
    const s = await connected();
    const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    s.agent.fail(await nextCall(s.agent, "pod.deploy"), "internal", "docker exploded");
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done.failure).toEqual({ class: "unknown", message: expect.stringContaining("docker exploded") });
    const failed = (await podEventRecords(s.pod.id)).find((e) => e.type === "deploy_failed");
    expect(JSON.parse(failed?.metadata ?? "{}").class).toBe("unknown");
  });

  it("400 on a pod not running, 409 with no repository", async () => {
    const { pod, as } = await onlineWithPod();
    expect((await call("POST", `/api/pods/${pod.name}/git/deploy`, undefined, as)).status).toBe(409);
    await env.DB.prepare("UPDATE pods SET status = 'stopped' WHERE id = ?").bind(pod.id).run();
    expect((await call("POST", `/api/pods/${pod.name}/git/deploy`, undefined, as)).status).toBe(400);
  });

  it(`at most ${FAIR_SHARE_LIMITS.deploy.perPod} deploys and rollbacks per pod in 10 minutes through the API (429 with Retry-After)`, async () => {
    const { pod, as } = await connected();
    for (let i = 0; i < FAIR_SHARE_LIMITS.deploy.perPod; i++) {
      const res = await call("POST", `/api/pods/${pod.name}/git/deploy`, undefined, as);
      expect(res.status, JSON.stringify(res.body)).toBe(202);
    }
    const refused = await call("POST", `/api/pods/${pod.name}/git/rollback`, undefined, as);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.body.error).toMatch(/too many deploy operations: at most 20 per 10 minute\(s\) per pod/);
  });

  it("one at a time: triggers during a deploy queue, and only the newest runs after it", async () => {
    const s = await connected();
    const first = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c1 = await nextCall(s.agent, "pod.deploy");
    const second = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const third = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(second.status).toBe(202);
    expect(third.status).toBe(202);
    await s.agent.expectNone("control:call", 500);
    const superseded = await settled(s.as, s.pod.name, second.body.id);
    expect(superseded).toMatchObject({
      status: "failed",
      started_at: null,
      failure: { message: `superseded by ${third.body.id}` },
    });
    expect((await deployment(s.as, s.pod.name, third.body.id)).body).toMatchObject({
      status: "deploying",
      started_at: null,
    });

    s.agent.ok(c1, okOutcome(c1, 1));
    expect((await settled(s.as, s.pod.name, first.body.id)).status).toBe("success");
    const c3 = await nextCall(s.agent, "pod.deploy", 10_000);
    expect((c3.params as { deploymentId: string }).deploymentId).toBe(third.body.id);
    s.agent.ok(c3, okOutcome(c3, 3));
    expect((await settled(s.as, s.pod.name, third.body.id)).status).toBe("success");
    await s.agent.expectNone("control:call", 300);
  });

  it("streams the build log while the deployment runs and ends with it", async () => {
    const s = await connected();
    const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.send({ type: "agent:deploy-log", deploymentId: res.body.id, seq: 0, chunk: "step one\n" });
    const { exports } = await import("cloudflare:workers");
    const stream = await exports.default.fetch(
      new Request(`http://localhost/api/pods/${s.pod.name}/git/deployments/${res.body.id}/log`, {
        headers: { authorization: `Bearer ${s.as.token}` },
      }),
    );
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/plain");
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    expect(text).toBe("step one\n");
    s.agent.send({ type: "agent:deploy-log", deploymentId: res.body.id, seq: 1, chunk: "step two\n" });
    s.agent.ok(c, okOutcome(c, 1));
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toBe("step one\nstep two\n");
  });

  it("drops log chunks from a host that does not hold the pod", async () => {
    const s = await connected();
    const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c = await nextCall(s.agent, "pod.deploy");
    const other = await insertHost();
    const { agent: intruder } = await FakeAgent.online(other);
    intruder.send({ type: "agent:deploy-log", deploymentId: res.body.id, seq: 0, chunk: "forged\n" });
    s.agent.send({ type: "agent:deploy-log", deploymentId: res.body.id, seq: 1, chunk: "real\n" });
    s.agent.ok(c, okOutcome(c, 1));
    const done = await settled(s.as, s.pod.name, res.body.id);
    await until(
      async () => (await deployment(s.as, s.pod.name, res.body.id)).body.build_log === "real\n",
      "log",
    );
    expect(done.status).toBe("success");
  });
});

describe("the build budget", () => {
  const MIN = 60_000;
  const buildMsOf = async (id: string) =>
    (
      await env.DB.prepare("SELECT build_ms FROM deployments WHERE id = ?")
        .bind(id)
        .first<{ build_ms: number | null }>()
    )?.build_ms;

  it("counts the host's build time per pod and day: the rest is the next deploy's limit, spent is 429 naming the budget", async () => {
    const s = await connected();
    const first = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c1 = await nextCall(s.agent, "pod.deploy");
    expect(c1.params).toMatchObject({ timeoutMs: 30 * MIN });
    s.agent.ok(c1, { ...okOutcome(c1, 1), build_ms: 29 * MIN });
    expect((await settled(s.as, s.pod.name, first.body.id)).status).toBe("success");
    expect(await buildMsOf(first.body.id)).toBe(29 * MIN);

    // a minute is left: the next deploy may use that much on the host, and fails when it did
    const second = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(second.status).toBe(202);
    const c2 = await nextCall(s.agent, "pod.deploy");
    expect(c2.params).toMatchObject({ timeoutMs: MIN });
    s.agent.ok(c2, {
      ok: false,
      class: "timeout",
      message: "the deploy did not finish in time",
      commit: null,
      build_ms: MIN + 500,
    });
    expect((await settled(s.as, s.pod.name, second.body.id)).status).toBe("failed");

    // back-to-back deploys cannot go on: 429 naming the plan's budget, until the next UTC day
    const refused = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(
      /used 30 of its 30 build minutes today \(the Launch plan's daily build budget\)/,
    );
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    await s.agent.expectNone("control:call");

    // a larger plan has more: the Grow plan's 120 minutes less the 30 used
    await env.DB.prepare("UPDATE pods SET plan_slug = 'grow' WHERE id = ?").bind(s.pod.id).run();
    const grown = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(grown.status).toBe(202);
    const c3 = await nextCall(s.agent, "pod.deploy");
    expect((c3.params as { timeoutMs: number }).timeoutMs).toBeGreaterThan(89 * MIN);
    expect((c3.params as { timeoutMs: number }).timeoutMs).toBeLessThanOrEqual(90 * MIN);
    s.agent.ok(c3, okOutcome(c3, 3));
    expect((await settled(s.as, s.pod.name, grown.body.id)).status).toBe("success");
  });

  it("a deploy queued while the budget lasted is not dispatched once it is spent: failed, class build_budget", async () => {
    const s = await connected();
    const first = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c1 = await nextCall(s.agent, "pod.deploy");
    const queued = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(queued.status).toBe(202);
    s.agent.ok(c1, { ...okOutcome(c1, 1), build_ms: 30 * MIN });
    expect((await settled(s.as, s.pod.name, first.body.id)).status).toBe("success");
    const done = await settled(s.as, s.pod.name, queued.body.id);
    expect(done).toMatchObject({ status: "failed" });
    expect(JSON.stringify(done.failure)).toContain("build_budget");
    expect(JSON.stringify(done.failure)).toMatch(/30 build minutes/);
    await s.agent.expectNone("control:call", 500);
    const events = await podEventRecords(s.pod.id);
    const failed = events.filter((e) => e.type === "deploy_failed");
    expect(failed).toHaveLength(1);
    expect(JSON.parse(failed[0]?.metadata ?? "{}")).toMatchObject({ class: "build_budget" });
  });

  it("an outcome without a measure (an older agent) counts from the deployment's start to its end", async () => {
    const s = await connected();
    const res = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, okOutcome(c, 1));
    await settled(s.as, s.pod.name, res.body.id);
    expect(await buildMsOf(res.body.id)).toBeNull();
    // the deployment took 30 minutes by its own timestamps
    await env.DB.prepare("UPDATE deployments SET started_at = ?, finished_at = ? WHERE id = ?")
      .bind(
        new Date(Date.now() - 1_000).toISOString(),
        new Date(Date.now() + 30 * MIN).toISOString(),
        res.body.id,
      )
      .run();
    const refused = await call("POST", `/api/pods/${s.pod.name}/git/deploy`, undefined, s.as);
    expect(refused.status).toBe(429);
  });
});

describe("rollback", () => {
  it("goes back to the previous successful release by default, or to a named one; the left one is rolled_back", async () => {
    const s = await connected();
    const d1 = await deployOnce(s, 1);
    const d2 = await deployOnce(s, 2, [d1]);

    const res = await call("POST", `/api/pods/${s.pod.name}/git/rollback`, undefined, s.as);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: "deploying", trigger: "rollback", rollback_of: d1 });
    const c = await nextCall(s.agent, "pod.rollback");
    expect(c.params).toEqual({ name: s.pod.name, deploymentId: res.body.id, release: d1 });
    s.agent.ok(c, { ...okOutcome(c, 1, [d2]), release: d1, kept: [d2, d1] });
    expect((await settled(s.as, s.pod.name, res.body.id)).status).toBe("success");
    expect((await deployment(s.as, s.pod.name, d2)).body.status).toBe("rolled_back");
    const events = (await podEventRecords(s.pod.id)).filter((e) => e.type === "deployment");
    expect(events.at(-1)?.message).toContain("rolled back");

    // explicitly forward again to d2's release
    const fwd = await call("POST", `/api/pods/${s.pod.name}/git/rollback`, { deployment_id: d2 }, s.as);
    expect(fwd.status, JSON.stringify(fwd.body)).toBe(202);
    const c2 = await nextCall(s.agent, "pod.rollback");
    expect((c2.params as { release: string }).release).toBe(d2);
    s.agent.ok(c2, { ...okOutcome(c2, 2), release: d2, kept: [d2, d1] });
    expect((await settled(s.as, s.pod.name, fwd.body.id)).status).toBe("success");
  });

  it("409 with nothing to roll back to, 404 for a release no longer kept or an unknown deployment", async () => {
    const s = await connected();
    expect((await call("POST", `/api/pods/${s.pod.name}/git/rollback`, undefined, s.as)).status).toBe(409);
    const d1 = await deployOnce(s, 1);
    const none = await call("POST", `/api/pods/${s.pod.name}/git/rollback`, undefined, s.as);
    expect(none.status).toBe(409);
    const d2 = await deployOnce(s, 2); // the host kept only d2
    const gone = await call("POST", `/api/pods/${s.pod.name}/git/rollback`, { deployment_id: d1 }, s.as);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toContain("no longer kept");
    const serving = await call("POST", `/api/pods/${s.pod.name}/git/rollback`, { deployment_id: d2 }, s.as);
    expect(serving.status).toBe(409);
    const unknown = await call(
      "POST",
      `/api/pods/${s.pod.name}/git/rollback`,
      { deployment_id: "dep_nope" },
      s.as,
    );
    expect(unknown.status).toBe(404);
  });

  it("a release the host no longer has ends the rollback failed, saying so", async () => {
    const s = await connected();
    const d1 = await deployOnce(s, 1);
    await deployOnce(s, 2, [d1]);
    const res = await call("POST", `/api/pods/${s.pod.name}/git/rollback`, undefined, s.as);
    s.agent.fail(await nextCall(s.agent, "pod.rollback"), "not_found", "no such release");
    const done = await settled(s.as, s.pod.name, res.body.id);
    expect(done.failure.message).toContain("no longer kept");
  });
});

const pushPayload = (
  repo: { owner: string; name: string },
  opts: { ref?: string; after?: string; message?: string } = {},
) =>
  JSON.stringify({
    ref: opts.ref ?? "refs/heads/main",
    before: sha(0),
    after: opts.after ?? sha(42),
    head_commit: { id: opts.after ?? sha(42), message: opts.message ?? "Update index.html" },
    repository: {
      full_name: `${repo.owner}/${repo.name}`,
      clone_url: `https://github.com/${repo.owner}/${repo.name}.git`,
      html_url: `https://github.com/${repo.owner}/${repo.name}`,
    },
  });

async function push(secret: string, body: string, headers: Record<string, string> = {}) {
  return call("POST", "/api/webhooks/repohost", undefined, {
    raw: body,
    headers: {
      "x-github-event": "push",
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(secret, body),
      ...headers,
    },
  });
}

describe("the git host's push webhook", () => {
  it("a signed push of the branch deploys its commit, with pending then success statuses; a replay is 409", async () => {
    const s = await connected();
    const body = pushPayload(s.repo);
    const delivery = crypto.randomUUID();
    const res = await push(s.git.webhook_secret, body, { "x-github-delivery": delivery });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: "deploying", trigger: "push", commit_sha: sha(42) });
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, { ...okOutcome(c, 42), commit: { sha: sha(42), message: "Update index.html" } });
    expect((await settled(s.as, s.pod.name, res.body.id)).status).toBe("success");
    const statuses = await until(async () => {
      const r = await doubleRequests(`${s.repo.path}/statuses/${sha(42)}`);
      return r.length >= 2 ? r : undefined;
    }, "statuses");
    expect(statuses.map((r) => (r.body as { state: string }).state)).toEqual(["pending", "success"]);

    const replay = await push(s.git.webhook_secret, body, { "x-github-delivery": delivery });
    expect(replay.status).toBe(409);
    expect(replay.body.error).toContain("already received");
    await s.agent.expectNone("control:call", 200);
  });

  it("the delivery id is required and recorded: none is 400; a push older than the ids are kept is a refused replay (409)", async () => {
    const s = await connected();
    const body = pushPayload(s.repo);
    const none = await call("POST", "/api/webhooks/repohost", undefined, {
      raw: body,
      headers: { "x-github-event": "push", "x-hub-signature-256": await sign(s.git.webhook_secret, body) },
    });
    expect(none.status).toBe(400);
    expect(none.body.error).toContain("X-GitHub-Delivery");
    const odd = await push(s.git.webhook_secret, body, { "x-github-delivery": "a b" });
    expect(odd.status).toBe(400);
    // a delivery captured 8 days ago, its id long forgotten: its signed pushed_at gives it away
    const old = JSON.stringify({
      ...JSON.parse(body),
      repository: { ...JSON.parse(body).repository, pushed_at: Math.floor(Date.now() / 1000) - 8 * 86_400 },
    });
    const stale = await push(s.git.webhook_secret, old);
    expect(stale.status).toBe(409);
    expect(stale.body.error).toContain("replay");
    await s.agent.expectNone("control:call", 200);
    // a fresh one deploys
    const fresh = JSON.stringify({
      ...JSON.parse(body),
      repository: { ...JSON.parse(body).repository, pushed_at: Math.floor(Date.now() / 1000) },
    });
    const res = await push(s.git.webhook_secret, fresh);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, okOutcome(c, 42));
    await settled(s.as, s.pod.name, res.body.id);
  });

  it("the delivery id is not signed: the same signed body under a fresh delivery id is a replay (409) and deploys nothing", async () => {
    const s = await connected();
    const body = pushPayload(s.repo, { after: sha(7), message: "seven" });
    const res = await push(s.git.webhook_secret, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, okOutcome(c, 7));
    await settled(s.as, s.pod.name, res.body.id);
    // an attacker holding the signed body sends it again under an id of their own, twice
    for (const _ of [1, 2]) {
      const delivery = crypto.randomUUID();
      const replay = await push(s.git.webhook_secret, body, { "x-github-delivery": delivery });
      expect(replay.status, JSON.stringify(replay.body)).toBe(409);
      expect(replay.body.error).toContain("replay");
      const recorded = await env.DB.prepare("SELECT id FROM git_webhook_deliveries WHERE id = ?")
        .bind(delivery)
        .first();
      expect(recorded).toBeNull();
    }
    await s.agent.expectNone("control:call", 200);
    const list = await call("GET", `/api/pods/${s.pod.name}/git/deployments`, undefined, s.as);
    expect(list.body.deployments.map((d: { id: string }) => d.id)).toEqual([res.body.id]);
  });

  it("a pushed_at beyond what a date holds is a 400, not a 500", async () => {
    const s = await connected();
    for (const pushedAt of [1e20, -1e20]) {
      const body = JSON.stringify({
        ...JSON.parse(pushPayload(s.repo)),
        repository: { ...JSON.parse(pushPayload(s.repo)).repository, pushed_at: pushedAt },
      });
      const res = await push(s.git.webhook_secret, body);
      expect(res.status, `${pushedAt}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error).toContain("pushed_at");
    }
    await s.agent.expectNone("control:call", 200);
  });

  it(`pushes during a deploy coalesce into one queued deployment (the newest commit wins); at most ${FAIR_SHARE_LIMITS.push.perPod} per pod in 10 minutes (429)`, async () => {
    const s = await connected();
    const first = await push(s.git.webhook_secret, pushPayload(s.repo, { after: sha(1), message: "one" }));
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const c1 = await nextCall(s.agent, "pod.deploy");
    // a burst while it runs: one row, no superseded failures, the last commit queued
    const burst: string[] = [];
    for (let n = 2; n <= 6; n++) {
      const res = await push(s.git.webhook_secret, pushPayload(s.repo, { after: sha(n), message: `c${n}` }));
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      burst.push(res.body.id);
    }
    expect(new Set(burst).size).toBe(1);
    const queued = (await deployment(s.as, s.pod.name, burst[0] ?? "")).body;
    expect(queued).toMatchObject({
      status: "deploying",
      commit_sha: sha(6),
      commit_message: "c6",
      started_at: null,
    });
    const list = await call("GET", `/api/pods/${s.pod.name}/git/deployments`, undefined, s.as);
    expect(list.body.deployments.map((d: { id: string }) => d.id).sort()).toEqual(
      [first.body.id, burst[0]].sort(),
    );
    // the pod's push budget: the rest of it, then 429 with Retry-After (nothing recorded for it)
    const { perPod } = FAIR_SHARE_LIMITS.push;
    for (let n = 7; n <= perPod; n++)
      expect((await push(s.git.webhook_secret, pushPayload(s.repo, { after: sha(n) }))).status).toBe(202);
    const delivery = crypto.randomUUID();
    const overBody = pushPayload(s.repo, { after: sha(99) });
    const over = await push(s.git.webhook_secret, overBody, { "x-github-delivery": delivery });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(over.body.error).toMatch(/too many pushes: at most 30 per 10 minutes per pod/);
    const recorded = await env.DB.prepare("SELECT id FROM git_webhook_deliveries WHERE id IN (?, ?)")
      .bind(delivery, `body#${await sha256Hex(overBody)}`)
      .first();
    expect(recorded).toBeNull();

    s.agent.ok(c1, okOutcome(c1, 1));
    expect((await settled(s.as, s.pod.name, first.body.id)).status).toBe("success");
    const c2 = await nextCall(s.agent, "pod.deploy", 10_000);
    expect((c2.params as { deploymentId: string }).deploymentId).toBe(burst[0]);
    s.agent.ok(c2, okOutcome(c2, perPod));
    expect((await settled(s.as, s.pod.name, burst[0] ?? "")).status).toBe("success");
    const events = await call("GET", `/api/pods/${s.pod.name}/events?type=deploy_failed`, undefined, s.as);
    expect(events.body.events).toEqual([]);
  }, 60_000);

  it("401 for a wrong or missing signature", async () => {
    const s = await connected();
    const body = pushPayload(s.repo);
    expect((await push("whs_wrong", body)).status).toBe(401);
    const unsigned = await call("POST", "/api/webhooks/repohost", undefined, {
      raw: body,
      headers: { "x-github-event": "push" },
    });
    expect(unsigned.status).toBe(401);
    const tampered = await call("POST", "/api/webhooks/repohost", undefined, {
      raw: body.replace("index", "other"),
      headers: { "x-github-event": "push", "x-hub-signature-256": await sign(s.git.webhook_secret, body) },
    });
    expect(tampered.status).toBe(401);
    await s.agent.expectNone("control:call", 200);
  });

  it("ignores [skip deploy], other branches and pushes while auto_deploy is off; answers ping", async () => {
    const s = await connected();
    const skip = await push(s.git.webhook_secret, pushPayload(s.repo, { message: "docs [skip deploy]" }));
    expect(skip.body).toMatchObject({ status: "ignored", reason: expect.stringContaining("[skip deploy]") });
    const other = await push(s.git.webhook_secret, pushPayload(s.repo, { ref: "refs/heads/feature" }));
    expect(other.status).toBe(200);
    expect(other.body.reason).toContain("feature");
    await call("PUT", `/api/pods/${s.pod.name}/git`, { auto_deploy: false }, s.as);
    const off = await push(s.git.webhook_secret, pushPayload(s.repo));
    expect(off.body).toMatchObject({ status: "ignored", reason: expect.stringContaining("auto_deploy") });
    const ping = await call("POST", "/api/webhooks/repohost", undefined, {
      raw: JSON.stringify({ zen: "Keep it logically awesome." }),
      headers: { "x-github-event": "ping" },
    });
    expect(ping.status).toBe(200);
    await s.agent.expectNone("control:call", 200);
    const list = await call("GET", `/api/pods/${s.pod.name}/git/deployments`, undefined, s.as);
    expect(list.body.deployments).toEqual([]);
  });
});

describe("the generic webhook", () => {
  it("deploys with the secret in a header or the query; 401 without it or with another", async () => {
    const s = await connected();
    const url = `/api/webhooks/git/${s.pod.name}`;
    expect((await call("POST", url, {})).status).toBe(401);
    expect((await call("POST", url, {}, { headers: { "x-webhook-secret": "whs_nope" } })).status).toBe(401);
    expect(
      (await call("POST", "/api/webhooks/git/no-such-pod", {}, { headers: { "x-webhook-secret": "x" } }))
        .status,
    ).toBe(401);
    const res = await call(
      "POST",
      url,
      { ref: "main", commit: sha(5), message: "ci build" },
      { headers: { "x-webhook-secret": s.git.webhook_secret } },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ trigger: "push", commit_sha: sha(5), commit_message: "ci build" });
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, okOutcome(c, 5));
    await settled(s.as, s.pod.name, res.body.id);

    const viaQuery = await call("POST", `${url}?secret=${s.git.webhook_secret}`, undefined, { raw: "" });
    expect(viaQuery.status).toBe(202);
    const c2 = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c2, okOutcome(c2, 6));
    await settled(s.as, s.pod.name, viaQuery.body.id);

    const other = await call(
      "POST",
      url,
      { ref: "refs/heads/dev" },
      { headers: { "x-webhook-secret": s.git.webhook_secret } },
    );
    expect(other.body).toMatchObject({ status: "ignored" });
    const bad = await call(
      "POST",
      url,
      { commit: "xyz" },
      { headers: { "x-webhook-secret": s.git.webhook_secret } },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("commit");
  });
});

describe("from a repository, and the repository helpers", () => {
  it("from-repo makes the pod, connects it, and deploys once it runs; without a preset it inspects first", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const user = await registerUser();
    const as = { token: user.token };
    const repo = newRepo();
    const res = call(
      "POST",
      "/api/pods/from-repo",
      { repo_url: repo.url, auth_token: TOKEN, region: host.region, build_command: "make" },
      as,
    );
    const inspect = await nextCall(agent, "repo.inspect");
    expect(inspect.params).toEqual({ source: { url: repo.url, branch: "main", token: TOKEN } });
    agent.ok(inspect, {
      preset: "nodejs",
      install_command: "npm ci",
      build_command: null,
      start_command: "npm start",
      port: 3000,
    });
    const created = await res;
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body.pod).toMatchObject({ status: "creating", preset: "nodejs" });
    expect(created.body.git).toMatchObject({
      repo_url: repo.url,
      build_command: "make",
      webhook: { auto: true },
    });
    expect(created.body.git.last_deployment).toMatchObject({ status: "deploying" });
    expect(created.body.pod.name).toMatch(/^site-/);

    const create = await nextCall(agent, "pod.create");
    agent.ok(create, running(created.body.pod.name));
    const deploy = await nextCall(agent, "pod.deploy", 10_000);
    expect(deploy.params).toMatchObject({
      name: created.body.pod.name,
      preset: "nodejs",
      buildCommand: "make",
    });
    agent.ok(deploy, okOutcome(deploy, 9));
    const list = await until(
      async () => {
        const r = await call("GET", `/api/pods/${created.body.pod.name}/git/deployments`, undefined, as);
        return r.body.deployments?.[0]?.status === "success" ? r.body.deployments : undefined;
      },
      "first deployment",
      10_000,
    );
    expect(list).toHaveLength(1);
  }, 20_000);

  it("branches and inspect ask a host; bad input is 400", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const user = await registerUser();
    const as = { token: user.token };
    const q = new URLSearchParams({ repo_url: "https://github.com/acme/site.git", auth_token: TOKEN });
    const pending = call("GET", `/api/repos/branches?${q}`, undefined, as);
    const b = await nextCall(agent, "repo.branches");
    expect(b.params).toEqual({ source: { url: "https://github.com/acme/site.git", token: TOKEN } });
    agent.ok(b, { branches: ["main", "dev"], default_branch: "main" });
    expect((await pending).body).toEqual({ branches: ["main", "dev"], default_branch: "main" });

    const q2 = new URLSearchParams({ repo_url: "https://github.com/acme/site.git", branch: "dev" });
    const pending2 = call("GET", `/api/repos/inspect?${q2}`, undefined, as);
    const i = await nextCall(agent, "repo.inspect");
    agent.ok(i, {
      preset: "python",
      install_command: "pip install -r requirements.txt",
      build_command: null,
      start_command: null,
      port: 8000,
    });
    expect((await pending2).body).toMatchObject({ preset: "python", port: 8000 });

    const bad = await call(
      "GET",
      "/api/repos/branches?repo_url=http%3A%2F%2Fexample.com%2Fx.git",
      undefined,
      as,
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("repo_url");
    expect((await call("GET", "/api/repos/inspect", undefined, as)).status).toBe(400);
  });
});

describe("attacker: repository URLs aimed inward", () => {
  it("https:// to a listening and to a closed loopback port get the same 400, and no host is asked", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const user = await registerUser();
    const as = { token: user.token };
    const s = await onlineWithPod("static");
    // a port something listens on here (the git host's REST double), and one nothing does
    const listening = new URL(env.GITHUB_API_BASE ?? "").port;
    const answers = [];
    for (const repo_url of [`https://127.0.0.1:${listening}/x.git`, "https://127.0.0.1:1/x.git"]) {
      const q = new URLSearchParams({ repo_url, auth_token: TOKEN });
      answers.push(
        await call("GET", `/api/repos/branches?${q}`, undefined, as),
        await call("GET", `/api/repos/inspect?${q}`, undefined, as),
        await call("POST", "/api/pods/from-repo", { repo_url, region: host.region }, as),
        await call("POST", `/api/pods/${s.pod.name}/git`, { repo_url }, s.as),
      );
    }
    for (const a of answers) {
      expect(a.status).toBe(400);
      expect(a.body).toEqual({
        error:
          "repo_url: must name a public host: repositories are never fetched from loopback, private, link-local or internal addresses",
      });
    }
    // every other inward target too, http:// included (ALLOW_HTTP_GIT_LOOPBACK opens loopback only)
    for (const repo_url of [
      "https://localhost/x.git",
      "https://10.0.0.7/x.git",
      "https://169.254.169.254/latest/x.git",
      "https://100.64.0.1/x.git",
      "https://[fd00::1]/x.git",
      "https://[::ffff:7f00:1]/x.git",
      "https://metadata.google.internal/x.git",
      "http://10.0.0.7/x.git",
      "http://169.254.169.254/x.git",
    ]) {
      const r = await call("GET", `/api/repos/branches?${new URLSearchParams({ repo_url })}`, undefined, as);
      expect(r.status, repo_url).toBe(400);
    }
    await agent.expectNone("control:call", 300);
    await s.agent.expectNone("control:call", 100);
  });

  it("a public-looking name whose DNS answers are inward is the same 400 (lookups); a public one reaches a host", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const user = await registerUser();
    const as = { token: user.token };
    const dns = env.DNS_RESOLVER_URL?.replace(/\/dns-query$/, "") ?? "";
    const setA = async (name: string, values: string[]) =>
      expect(
        (await fetch(`${dns}/__double/a/${name}`, { method: "PUT", body: JSON.stringify({ values }) }))
          .status,
      ).toBe(200);
    await setA("inward-git.repos.test", ["93.184.215.14", "10.0.0.9"]);
    await setA("public-git.repos.test", ["93.184.215.14"]);
    for (const path of ["branches", "inspect"]) {
      const q = new URLSearchParams({ repo_url: "https://inward-git.repos.test/acme/x.git" });
      const r = await call("GET", `/api/repos/${path}?${q}`, undefined, as);
      expect(r.status).toBe(400);
      expect(r.body.error).toContain("must name a public host");
    }
    await agent.expectNone("control:call", 200);
    const q = new URLSearchParams({ repo_url: "https://public-git.repos.test/acme/x.git" });
    const pending = call("GET", `/api/repos/branches?${q}`, undefined, as);
    agent.ok(await nextCall(agent, "repo.branches"), { branches: ["main"], default_branch: "main" });
    expect((await pending).status).toBe(200);
  });
});

describe("attacker: repository lookups cannot hog the hosts", () => {
  it("30 inspects at once from one account: the cap's worth reach a host, the rest are 429 at once", async () => {
    const host = await insertHost();
    const { agent } = await FakeAgent.online(host);
    const user = await registerUser();
    const as = { token: user.token };
    const q = new URLSearchParams({ repo_url: "https://github.com/acme/big.git" });
    let settled = 0;
    const pending = Array.from({ length: 30 }, () =>
      call("GET", `/api/repos/inspect?${q}`, undefined, as).then((r) => {
        settled++;
        return r;
      }),
    );
    const calls = [];
    for (let i = 0; i < REPO_LOOKUP_LIMITS.atOnce; i++) calls.push(await nextCall(agent, "repo.inspect"));
    await until(async () => settled === 30 - REPO_LOOKUP_LIMITS.atOnce || undefined, "the refusals", 10_000);
    await agent.expectNone("control:call", 200);
    for (const c of calls)
      agent.ok(c, {
        preset: "static",
        install_command: null,
        build_command: null,
        start_command: null,
        port: 8080,
      });
    const answers = await Promise.all(pending);
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(REPO_LOOKUP_LIMITS.atOnce);
    expect(refused).toHaveLength(30 - REPO_LOOKUP_LIMITS.atOnce);
    expect(refused[0]?.body.error).toContain("at once per account");
    expect(refused[0]?.headers.get("retry-after")).toBe("1");
    // the places are given back when the lookups end
    const again = call("GET", `/api/repos/inspect?${q}`, undefined, as);
    agent.ok(await nextCall(agent, "repo.inspect"), {
      preset: "static",
      install_command: null,
      build_command: null,
      start_command: null,
      port: 8080,
    });
    expect((await again).status).toBe(200);
  }, 30_000);

  it("a host busy with its most lookups: the next host takes it; with none free, 429", async () => {
    const agents = [
      (await FakeAgent.online(await insertHost())).agent,
      (await FakeAgent.online(await insertHost())).agent,
    ];
    const user = await registerUser();
    const q = new URLSearchParams({ repo_url: "https://github.com/acme/site.git" });
    /** the call one of the two agents gets next, and which agent got it */
    const asked = async () => {
      for (let tries = 0; tries < 100; tries++)
        for (const agent of agents) {
          const c = await agent.next("control:call", 25).catch(() => undefined);
          if (c) return { agent, c };
        }
      throw new Error("no host was asked");
    };
    const pending = call("GET", `/api/repos/branches?${q}`, undefined, { token: user.token });
    const first = await asked();
    first.agent.fail(first.c, "rate_limited", "this host already has 4 repository lookups in progress");
    const second = await asked();
    expect(second.agent).not.toBe(first.agent);
    second.agent.ok(second.c, { branches: ["main"], default_branch: "main" });
    expect((await pending).body).toEqual({ branches: ["main"], default_branch: "main" });

    const none = call("GET", `/api/repos/branches?${q}`, undefined, { token: user.token });
    for (let i = 0; i < 2; i++) {
      const busy = await asked();
      busy.agent.fail(busy.c, "rate_limited", "this host already has 4 repository lookups in progress");
    }
    expect((await none).status).toBe(429);
  }, 20_000);

  it("per account and per IP: 60 lookups in 10 minutes, then 429 naming which", async () => {
    const user = await registerUser();
    const refused = new URLSearchParams({ repo_url: "https://127.0.0.1/x.git" });
    // refused URLs count too (they ask no host): the budget is the route's, not the hosts'
    // as many at a time as an account may have in progress (each holds a place while it runs)
    const inBatches = async (n: number, one: () => Promise<{ status: number }>) => {
      const statuses: number[] = [];
      for (let i = 0; i < n; i += REPO_LOOKUP_LIMITS.atOnce)
        for (const r of await Promise.all(
          Array.from({ length: Math.min(REPO_LOOKUP_LIMITS.atOnce, n - i) }, one),
        ))
          statuses.push(r.status);
      return statuses;
    };
    const spent = await inBatches(REPO_LOOKUP_LIMITS.perAccount, () =>
      call("GET", `/api/repos/branches?${refused}`, undefined, { token: user.token }),
    );
    expect(spent).toEqual(spent.map(() => 400));
    const over = await call("GET", `/api/repos/inspect?${refused}`, undefined, { token: user.token });
    expect(over.status).toBe(429);
    expect(over.body.error).toContain("per account");

    // another account from one address: that address's budget is spent, whoever signs in from it
    const ip = freshIp();
    const other = await registerUser();
    const fromOther = await inBatches(REPO_LOOKUP_LIMITS.perIp, () =>
      call("GET", `/api/repos/branches?${refused}`, undefined, { token: other.token, ip }),
    );
    expect(fromOther).toEqual(fromOther.map(() => 400));
    const fromIp = await call("GET", `/api/repos/branches?${refused}`, undefined, {
      token: (await registerUser()).token,
      ip,
    });
    expect(fromIp.status).toBe(429);
    expect(fromIp.body.error).toContain("per IP");
  }, 90_000);
});

describe("another team", () => {
  it("cannot see or touch a pod's deployments, and its webhook secret opens only its own pod", async () => {
    const s = await connected();
    const d1 = await deployOnce(s, 1);
    const eve = await registerUser("Eve");
    for (const [method, path] of [
      ["GET", `/api/pods/${s.pod.name}/git`],
      ["GET", `/api/pods/${s.pod.name}/git/deployments`],
      ["GET", `/api/pods/${s.pod.name}/git/deployments/${d1}`],
      ["GET", `/api/pods/${s.pod.name}/git/deployments/${d1}/log`],
      ["POST", `/api/pods/${s.pod.name}/git/deploy`],
      ["POST", `/api/pods/${s.pod.name}/git/rollback`],
      ["DELETE", `/api/pods/${s.pod.name}/git`],
    ] as const) {
      const res = await call(method, path, undefined, { token: eve.token });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const mine = await connected();
    const cross = await call(
      "POST",
      `/api/webhooks/git/${s.pod.name}`,
      {},
      {
        headers: { "x-webhook-secret": mine.git.webhook_secret },
      },
    );
    expect(cross.status).toBe(401);
    await s.agent.expectNone("control:call", 200);
  });
});

/** A value sealed as before associated data: `v1.<iv>.<ciphertext>`, AES-GCM with the key alone. */
async function sealV1(keyBase64: string, plaintext: string) {
  const bytes = Uint8Array.from(atob(keyBase64), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(plaintext)),
  );
  const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
  return `v1.${b64(iv)}.${b64(sealed)}`;
}

describe("secrets at rest", () => {
  it("a webhook secret's sealed value copied into another pod's row in D1 does not open there", async () => {
    // The attacker knows its own pod's webhook secret and can write D1 (a leaked export put back, a
    // write path gone wrong): it copies its sealed secret over the victim's.
    const victim = await connected();
    const mine = await connected();
    const copy = await env.DB.prepare(
      "UPDATE git_configs SET webhook_secret_encrypted = (SELECT webhook_secret_encrypted FROM git_configs WHERE pod_id = ?) WHERE pod_id = ?",
    )
      .bind(mine.pod.id, victim.pod.id)
      .run();
    expect(copy.meta.changes).toBe(1);
    const res = await call(
      "POST",
      `/api/webhooks/git/${victim.pod.name}`,
      {},
      { headers: { "x-webhook-secret": mine.git.webhook_secret } },
    );
    expect(res.status).toBe(401);
    // the token sealed for one purpose does not open as the other either
    await env.DB.prepare("UPDATE git_configs SET webhook_secret_encrypted = token_encrypted WHERE pod_id = ?")
      .bind(mine.pod.id)
      .run();
    const asToken = await call(
      "POST",
      `/api/webhooks/git/${mine.pod.name}`,
      {},
      { headers: { "x-webhook-secret": TOKEN } },
    );
    expect(asToken.status).toBe(401);
    await victim.agent.expectNone("control:call", 200);
    await mine.agent.expectNone("control:call", 200);
  });

  it("a secret sealed before associated data (v1) still opens where it is", async () => {
    const s = await connected();
    const secret = "whs_sealed_the_old_way_0123456789abcdef";
    await env.DB.prepare("UPDATE git_configs SET webhook_secret_encrypted = ? WHERE pod_id = ?")
      .bind(await sealV1(env.GIT_TOKEN_KEY ?? "", secret), s.pod.id)
      .run();
    const res = await call(
      "POST",
      `/api/webhooks/git/${s.pod.name}`,
      { ref: "main", commit: sha(7) },
      { headers: { "x-webhook-secret": secret } },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const c = await nextCall(s.agent, "pod.deploy");
    s.agent.ok(c, okOutcome(c, 7));
    await settled(s.as, s.pod.name, res.body.id);
  });
});
