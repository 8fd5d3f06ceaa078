import { createHmac, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Files, type GitServer, startGitServer } from "../support/git-server";
import { httpGet } from "../support/http";
import { type RepohostDouble, startRepohostDouble } from "../support/repohost";
import { type ApiClient, signUp } from "./support/api";
import { createRunningPods, waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, sleep, startStack, waitFor } from "./support/stack";

/**
 * Git deployments end to end (docs/git.md): the public API of the Worker in workerd, the agent
 * fetching from a real smart-HTTP git server behind a token (test/support/git-server.ts), builds and
 * health-gated switches on the real Docker engine, the page through the host's ingress, and the git
 * host's REST double (test/support/repohost.ts) for the push hook and the commit statuses. The
 * repositories count as "hosted": REPOHOST_GIT_BASE is the git server's base URL and
 * GITHUB_API_BASE the double's. One stack and two pods for the whole file.
 */

/** A token no file or log would hold by chance. */
const TOKEN = `ghp_e2e${randomUUID().replaceAll("-", "")}Qz7XTOKEN`;
/** How the agent sends it to git (http.extraHeader); must not leak either. */
const TOKEN_BASIC = Buffer.from(`x-access-token:${TOKEN}`).toString("base64");

/** A small Node app with one local dependency (no registry needed) saying `text` on every path. */
const PACKAGE_JSON = JSON.stringify({
  name: "app",
  version: "1.0.0",
  scripts: { start: "node server.js" },
  dependencies: { greet: "file:./vendor/greet" },
});
const nodeApp = (text: string, over: Files = {}): Files => ({
  "package.json": PACKAGE_JSON,
  "vendor/greet/package.json": JSON.stringify({ name: "greet", version: "1.0.0", main: "index.js" }),
  "vendor/greet/index.js": 'module.exports = () => "greet";\n',
  "server.js": serverJs(text),
  ...over,
});
const serverJs = (text: string) => `const http = require("http");
const greet = require("greet");
http.createServer((req, res) => res.end("<h1>${text}</h1> " + greet()))
  .listen(Number(process.env.PORT), "0.0.0.0");
`;

type User = Awaited<ReturnType<typeof signUp>>;

describe("git deployments end to end", () => {
  let stack: Stack;
  let server: GitServer;
  let repohost: RepohostDouble;
  let alice: User;
  let api: ApiClient;
  /** every API answer's body in this file (for the token check) */
  const bodies: string[] = [];
  const repo = { owner: "acme", name: "site" };
  const repoPath = `${repo.owner}/${repo.name}`;
  let pod: string;
  let fromRepoPod: string | undefined;
  let secret: string;
  const deploymentIds: string[] = [];
  let v1Deployment: string;
  let v2Deployment: string;
  let v2Sha: string;
  let v2Delivery: string;
  const t0 = performance.now();
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

  /** alice's API client, recording every answer */
  const recorded = (client: ApiClient): ApiClient => {
    const keep = async <T>(p: Promise<T>) => {
      const r = await p;
      bodies.push(JSON.stringify((r as { body: unknown }).body));
      return r;
    };
    return {
      get: (path) => keep(client.get(path)),
      post: (path, body) => keep(client.post(path, body)),
      put: (path, body) => keep(client.put(path, body)),
      delete: (path, body) => keep(client.delete(path, body)),
    };
  };

  const page = (name: string) =>
    httpGet(stack.edgePort, `${name}.pods.localhost`).catch((e) => ({
      status: 0,
      body: String(e),
      headers: {} as Record<string, string | string[] | undefined>,
    }));
  const pageShows = (name: string, text: string, timeoutMs = 30_000) =>
    waitFor(
      `${name} to serve "${text}"`,
      async () => ((await page(name)).body.includes(text) ? true : undefined),
      timeoutMs,
    );
  const deployment = async (name: string, id: string) => {
    const res = await api.get(`/api/pods/${name}/git/deployments/${id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const settled = (name: string, id: string, timeoutMs = 120_000) =>
    waitFor(
      `deployment ${id} to end`,
      async () => {
        const d = await deployment(name, id);
        return d.status === "deploying" ? undefined : d;
      },
      timeoutMs,
    );
  /** the streamed build log read as a browser reads it: its encoding and text */
  const readLogAsABrowser = async (name: string, id: string) => {
    const res = await fetch(`${stack.api}/api/pods/${name}/git/deployments/${id}/log`, {
      headers: { authorization: `Bearer ${alice.token}`, "accept-encoding": "gzip, deflate, br" },
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    return { encoding: res.headers.get("content-encoding") ?? "", text };
  };
  const events = async (name: string) => {
    const res = await api.get(`/api/pods/${name}/events?limit=200`);
    expect(res.status).toBe(200);
    // metadata is a JSON string in the API (omitted when empty)
    return (res.body.events as { type: string; metadata?: string }[]).map((e) => ({
      type: e.type,
      metadata: e.metadata ? (JSON.parse(e.metadata) as Record<string, unknown>) : undefined,
    }));
  };

  const pushPayload = (opts: { ref?: string; after: string; message: string }) =>
    JSON.stringify({
      ref: opts.ref ?? "refs/heads/main",
      before: `${"0".repeat(39)}1`,
      after: opts.after,
      head_commit: { id: opts.after, message: opts.message },
      repository: {
        full_name: repoPath,
        clone_url: server.url(repoPath),
        html_url: `${server.base}/${repoPath}`,
      },
    });
  /** the git host's delivery of a push: signed with the hook's secret as the double recorded it */
  const deliver = async (body: string, opts: { delivery?: string; key?: string } = {}) => {
    const signature = `sha256=${createHmac("sha256", opts.key ?? secret)
      .update(body)
      .digest("hex")}`;
    const res = await fetch(`${stack.api}/api/webhooks/repohost`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": opts.delivery ?? randomUUID(),
        "x-hub-signature-256": signature,
      },
      body,
    });
    const text = await res.text();
    bodies.push(text);
    return { status: res.status, body: JSON.parse(text) };
  };

  /** requests through the ingress for as long as it runs, every failure counted */
  const pollIngress = (name: string) => {
    let stop = false;
    let count = 0;
    const failures: string[] = [];
    const seen = new Set<string>();
    const done = (async () => {
      while (!stop) {
        const r = await page(name);
        count++;
        // the edge's own pages name themselves (x-podhost-edge): which one says why the pod was not served
        if (r.status !== 200)
          failures.push(`${r.status} ${String(r.headers["x-podhost-edge"] ?? "")} ${r.body.slice(0, 60)}`);
        else seen.add(r.body);
        await sleep(50);
      }
    })();
    return {
      async end() {
        stop = true;
        await done;
        return { count, failures, seen: [...seen] };
      },
    };
  };

  beforeAll(async () => {
    [server, repohost] = await Promise.all([startGitServer({ token: TOKEN }), startRepohostDouble()]);
    await server.createRepo(repoPath, nodeApp("site v1"));
    stack = await startStack("git", {
      vars: { GITHUB_API_BASE: repohost.url, REPOHOST_GIT_BASE: server.base },
    });
    alice = await signUp(stack.api, "Alice");
    api = recorded(alice.api);
    pod = `gsite-${stack.prefix.slice(-4)}`;
    await waitForHostOnline(api);
    await createRunningPods(api, [[pod, "nodejs"]]);
    console.log(`[git e2e] stack up, pod running: ${elapsed()}`);
  });

  afterAll(async () => {
    await stack?.stop();
    await Promise.all([server?.close(), repohost?.close()]);
  });

  it("connects a hosted repository with a token: 201, the push hook made with a secret", async () => {
    const res = await api.post(`/api/pods/${pod}/git`, {
      repo_url: server.url(repoPath),
      branch: "main",
      auth_token: TOKEN,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      repo_url: server.url(repoPath),
      branch: "main",
      auto_deploy: true,
      webhook: { auto: true, note: null },
    });
    const hooks = repohost.requests.filter((r) => r.path === `/repos/${repoPath}/hooks`);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toMatchObject({ method: "POST", authorization: `Bearer ${TOKEN}` });
    const config = (hooks[0]?.body as { config: { secret: string; url: string } } | undefined)?.config ?? {
      secret: "",
      url: "",
    };
    expect(config.url).toMatch(/\/api\/webhooks\/repohost$/);
    expect(config.secret).toMatch(/^whs_/);
    expect(config.secret).toBe(res.body.webhook_secret);
    secret = config.secret;

    // A first deploy by hand (v1), so a later rollback has a release to go back to.
    const dep = await api.post(`/api/pods/${pod}/git/deploy`);
    expect(dep.status, JSON.stringify(dep.body)).toBe(202);
    v1Deployment = dep.body.id;
    deploymentIds.push(v1Deployment);
    const done = await settled(pod, v1Deployment);
    expect(done.status, JSON.stringify(done)).toBe("success");
    expect((await page(pod)).body).toContain("site v1");
    console.log(`[git e2e] v1 deployed by hand: ${elapsed()}`);
  }, 150_000);

  it("a pushed commit and its signed webhook deploy it: success, served, event, statuses, build log", async () => {
    v2Sha = await server.commit(repoPath, { "server.js": serverJs("site v2") }, { message: "v2" });
    v2Delivery = randomUUID();
    // The switch is health-gated through a candidate container: no request may fail during it.
    const poll = pollIngress(pod);
    const started = performance.now();
    const res = await deliver(pushPayload({ after: v2Sha, message: "v2" }), { delivery: v2Delivery });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: "deploying", trigger: "push", commit_sha: v2Sha });
    v2Deployment = res.body.id;
    deploymentIds.push(v2Deployment);
    const streamed = readLogAsABrowser(pod, v2Deployment);
    const done = await settled(pod, v2Deployment);
    expect(done.status, JSON.stringify(done)).toBe("success");
    // Read as a browser asks (gzip accepted), the log is not compressed: a gzip stream would hold the
    // build's short lines until the deploy ended (the dashboard's live log showed nothing until then).
    const log = await streamed;
    expect(log.encoding).not.toMatch(/gzip|br/);
    expect(log.text).toContain("[podhost");
    const polled = await poll.end();
    console.log(
      `[git e2e] push deploy took ${((performance.now() - started) / 1000).toFixed(1)} s; ${polled.count} requests through the ingress, ${polled.failures.length} failed`,
    );
    expect(polled.failures).toEqual([]);
    expect((await page(pod)).body).toContain("site v2");
    expect(done.build_log).toEqual(expect.any(String));
    expect(done.build_log.length).toBeGreaterThan(0);
    expect(done.build_log).toContain("[podhost");

    const list = await events(pod);
    expect(list).toContainEqual(
      expect.objectContaining({
        type: "deployment",
        metadata: expect.objectContaining({
          deployment_id: v2Deployment,
          trigger: "push",
          commit_sha: v2Sha,
        }),
      }),
    );
    const statuses = await waitFor("both commit statuses", async () => {
      const r = repohost.requests.filter((q) => q.path === `/repos/${repoPath}/statuses/${v2Sha}`);
      return r.length >= 2 ? r : undefined;
    });
    expect(statuses.map((r) => (r.body as { state: string }).state)).toEqual(["pending", "success"]);
    expect(statuses.every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);
  }, 150_000);

  it("a broken commit fails with its class while the old release keeps answering", async () => {
    const brokenSha = await server.commit(
      repoPath,
      {
        "package.json": JSON.stringify({
          name: "app",
          version: "1.0.1",
          scripts: { start: "node server.js", build: "echo building; exit 1" },
          dependencies: { greet: "file:./vendor/greet" },
        }),
        "server.js": serverJs("site broken"),
      },
      { message: "broken build" },
    );
    const poll = pollIngress(pod);
    const res = await deliver(pushPayload({ after: brokenSha, message: "broken build" }));
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    deploymentIds.push(res.body.id);
    const done = await settled(pod, res.body.id);
    await sleep(500);
    const polled = await poll.end();
    console.log(
      `[git e2e] ${polled.count} requests through the ingress during the failed deploy, ${polled.failures.length} failed${polled.failures.length ? `: ${polled.failures.slice(0, 3).join(" | ")}` : ""}`,
    );
    expect(done.status).toBe("failed");
    expect(done.failure).toMatchObject({ class: "build_script" });
    expect(polled.failures).toEqual([]);
    expect(polled.count).toBeGreaterThan(5);
    expect(polled.seen.every((b) => b.includes("site v2"))).toBe(true);
    expect(done.build_log).toContain("building");
    const failed = (await events(pod)).find(
      (e) => e.type === "deploy_failed" && e.metadata?.deployment_id === res.body.id,
    );
    expect(failed?.metadata).toMatchObject({ class: "build_script", trigger: "push" });
    const statuses = await waitFor("the failure status", async () => {
      const r = repohost.requests.filter((q) => q.path === `/repos/${repoPath}/statuses/${brokenSha}`);
      return r.length >= 2 ? r : undefined;
    });
    expect(statuses.map((r) => (r.body as { state: string }).state)).toEqual(["pending", "failure"]);
  }, 150_000);

  it("a commit whose app crashes at start fails as missing_start; the old release keeps answering", async () => {
    const crashSha = await server.commit(
      repoPath,
      {
        "package.json": PACKAGE_JSON, // without the failing build script of the commit before
        "server.js": 'console.error("boom at start"); process.exit(1);\n',
      },
      { message: "crash at start" },
    );
    const poll = pollIngress(pod);
    const started = performance.now();
    const res = await deliver(pushPayload({ after: crashSha, message: "crash at start" }));
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    deploymentIds.push(res.body.id);
    const done = await settled(pod, res.body.id);
    await sleep(500);
    const polled = await poll.end();
    console.log(
      `[git e2e] crash at start: failed after ${((performance.now() - started) / 1000).toFixed(1)} s; ${polled.count} requests through the ingress, ${polled.failures.length} failed`,
    );
    expect(done.status).toBe("failed");
    expect(done.failure).toMatchObject({ class: "missing_start" });
    expect(polled.failures).toEqual([]);
    expect(polled.count).toBeGreaterThan(5);
    expect(polled.seen.every((b) => b.includes("site v2"))).toBe(true);
    const failed = (await events(pod)).find(
      (e) => e.type === "deploy_failed" && e.metadata?.deployment_id === res.body.id,
    );
    expect(failed?.metadata).toMatchObject({ class: "missing_start", trigger: "push" });
  }, 150_000);

  it("rolls back to the previous release, which serves again", async () => {
    const res = await api.post(`/api/pods/${pod}/git/rollback`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ trigger: "rollback", rollback_of: v1Deployment });
    deploymentIds.push(res.body.id);
    const done = await settled(pod, res.body.id);
    expect(done.status, JSON.stringify(done)).toBe("success");
    expect((await page(pod)).body).toContain("site v1");
    expect((await deployment(pod, v2Deployment)).status).toBe("rolled_back");
    expect((await events(pod)).map((e) => e.metadata?.trigger)).toContain("rollback");
  }, 150_000);

  it("refuses a bad signature (401) and a replayed delivery (409), ignores another branch and [skip deploy]", async () => {
    const before = (await api.get(`/api/pods/${pod}/git/deployments?limit=50`)).body.deployments.length;
    const body = pushPayload({ after: v2Sha, message: "v2" });
    expect((await deliver(body, { key: "whs_not-the-secret" })).status).toBe(401);
    const tampered = await fetch(`${stack.api}/api/webhooks/repohost`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      },
      body: body.replace("v2", "v3"),
    });
    expect(tampered.status).toBe(401);
    bodies.push(await tampered.text());

    const replay = await deliver(body, { delivery: v2Delivery });
    expect(replay).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining("already received") },
    });

    const featureSha = await server.commit(
      repoPath,
      { "server.js": serverJs("feature") },
      { branch: "feature" },
    );
    const other = await deliver(
      pushPayload({ ref: "refs/heads/feature", after: featureSha, message: "feature work" }),
    );
    expect(other).toMatchObject({
      status: 200,
      body: { status: "ignored", reason: expect.stringContaining("feature") },
    });

    const skipSha = await server.commit(
      repoPath,
      { "README.md": "docs" },
      { branch: "main", message: "docs [skip deploy]" },
    );
    const skip = await deliver(pushPayload({ after: skipSha, message: "docs [skip deploy]" }));
    expect(skip).toMatchObject({
      status: 200,
      body: { status: "ignored", reason: expect.stringContaining("[skip deploy]") },
    });

    const after = (await api.get(`/api/pods/${pod}/git/deployments?limit=50`)).body.deployments.length;
    expect(after).toBe(before);
    expect((await page(pod)).body).toContain("site v1");
  });

  it("creates a pod from a repository: the pod runs, its first deployment succeeds, the page serves", async () => {
    const helloPath = "acme/hello";
    await server.createRepo(helloPath, nodeApp("hello from the repo"));
    const started = performance.now();
    const res = await api.post("/api/pods/from-repo", {
      repo_url: server.url(helloPath),
      auth_token: TOKEN,
      name: `ghello-${stack.prefix.slice(-4)}`,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.pod).toMatchObject({ preset: "nodejs", status: "creating" });
    expect(res.body.git).toMatchObject({
      repo_url: server.url(helloPath),
      webhook: { auto: true },
      last_deployment: { status: "deploying" },
    });
    fromRepoPod = res.body.pod.name as string;
    const first = res.body.git.last_deployment.id as string;
    deploymentIds.push(first);
    await waitForPodStatus(api, fromRepoPod, "running", 120_000);
    const done = await settled(fromRepoPod, first, 150_000);
    expect(done.status, JSON.stringify(done)).toBe("success");
    await pageShows(fromRepoPod, "hello from the repo");
    console.log(`[git e2e] from-repo to served page: ${((performance.now() - started) / 1000).toFixed(1)} s`);
    expect(repohost.requests.some((r) => r.path === `/repos/${helloPath}/hooks` && r.method === "POST")).toBe(
      true,
    );
  }, 240_000);

  it("never shows the token: API answers, events, build logs, the pods' files", async () => {
    const pods = [pod, ...(fromRepoPod ? [fromRepoPod] : [])];
    for (const name of pods) {
      await events(name);
      await api.get(`/api/pods/${name}/git`);
      await api.get(`/api/pods/${name}/git/deployments?limit=50`);
    }
    for (const id of deploymentIds) {
      const owner = id === deploymentIds.at(-1) && fromRepoPod ? fromRepoPod : pod;
      const d = await deployment(owner, id);
      expect(d.build_log ?? "").not.toContain(TOKEN);
    }
    expect(bodies.length).toBeGreaterThan(20);
    for (const body of bodies) {
      expect(body).not.toContain(TOKEN);
      expect(body).not.toContain(TOKEN_BASIC);
    }
    for (const name of pods) {
      // Exec as pod_user: grep every file of the home, nothing excluded; 1 = no match. The needles
      // travel base64-encoded, so the exec request itself cannot leave the token anywhere.
      const res = await alice.api.post(`/api/pods/${name}/exec`, {
        command: [
          "sh",
          "-c",
          'grep -r -l -a -e "$(echo "$1" | base64 -d)" -e "$(echo "$2" | base64 -d)" /home/pod_user',
          "sh",
          Buffer.from(TOKEN).toString("base64"),
          Buffer.from(TOKEN_BASIC).toString("base64"),
        ],
        timeout_s: 60,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.stdout).toBe("");
      expect(res.body.exit_code, res.body.stderr).toBe(1);
    }
    // Nor the agent's own output; and the git server did get it (the fetches were authenticated).
    expect(stack.agent.output.join("")).not.toContain(TOKEN);
    expect(server.authHeaders).toContain(`Basic ${TOKEN_BASIC}`);
    console.log(`[git e2e] ${bodies.length} API answers checked; total ${elapsed()}`);
  }, 120_000);
});
