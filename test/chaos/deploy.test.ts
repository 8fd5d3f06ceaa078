import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { dockerInspect } from "../e2e/support/docker";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { type Files, type GitServer, startGitServer } from "../support/git-server";
import { httpGet } from "../support/http";
import {
  agentGoneBeforeDispatch,
  agentReaches,
  crashAgent,
  dockerObjects,
  mentioning,
  podSh,
  printOnFailure,
  within,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/** A small Node app (no registry needed) saying `text` on every path. */
const nodeApp = (text: string): Files => ({
  "package.json": JSON.stringify({ name: "app", version: "1.0.0", scripts: { start: "node server.js" } }),
  "server.js": `require("http").createServer((q, s) => s.end("<h1>${text}</h1>")).listen(Number(process.env.PORT), "0.0.0.0");\n`,
});

/**
 * A git deploy and a rollback under faults (docs/reliability.md), against the smart-HTTP git server
 * on 127.0.0.1 (test/support/git-server.ts): the agent SIGKILLed before the command reaches it,
 * mid-work (once the deploy's build container exists, seen in Docker) and after the work, at its
 * `command done` line; the Worker restarted mid-deploy and mid-rollback. Each deployment ends
 * `success` once (one `deployment` event, one release), the page serves it, and no build or
 * candidate container is left.
 */
describe("chaos: git deploy and rollback", () => {
  let stack: Stack;
  let server: GitServer;
  let alice: User;
  let pod: string;
  let candidate: string;
  let version = 1;
  const repo = "acme/chaos";
  /** the time a deployment may take to end once the fault is over: the agent's return, a re-sent build */
  const ENDS_WITHIN_MS = 240_000;

  beforeAll(async () => {
    server = await startGitServer();
    await server.createRepo(repo, nodeApp("v1"));
    stack = await startStack("chaosdp");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-dp-${stack.prefix.slice(-4)}`;
    candidate = `${stack.prefix}-${pod}_candidate`;
    const made = await alice.api.post("/api/pods", { name: pod, preset: "nodejs", plan_slug: "build" });
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    await waitForPodStatus(alice.api, pod, "running", 180_000);
    const connected = await alice.api.post(`/api/pods/${pod}/git`, {
      repo_url: server.url(repo),
      branch: "main",
    });
    expect(connected.status, JSON.stringify(connected.body)).toBe(201);
    const first = await alice.api.post(`/api/pods/${pod}/git/deploy`);
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(await settled(first.body.id)).toMatchObject({ status: "success" });
    await serves("v1");
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
    await server?.close();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/deploy|command|git/)));

  /** whether a build container of the pod is there (one per deployment: `<pod>_build-<id>`) */
  const buildBoxThere = async () =>
    (await dockerObjects(stack.prefix)).containers.some((c) => c.startsWith(`${stack.prefix}-${pod}_build-`));

  const settled = (id: string, timeoutMs = ENDS_WITHIN_MS) =>
    waitFor(
      `deployment ${id} to end`,
      async () => {
        const d = (await within(alice.api.get(`/api/pods/${pod}/git/deployments/${id}`))).body;
        return d?.status && d.status !== "deploying" && d.status !== "queued" ? d : undefined;
      },
      timeoutMs,
    );

  const serves = (text: string) =>
    waitFor(
      `the pod to serve ${text}`,
      async () =>
        (await httpGet(stack.edgePort, `${pod}.pods.localhost`).catch(() => ({ body: "" }))).body.includes(
          `<h1>${text}</h1>`,
        )
          ? true
          : undefined,
      60_000,
    );

  /** until no build box and no candidate of the pod is there */
  const helpersGone = () =>
    waitFor(
      "the build box and candidate to go",
      async () =>
        !(await buildBoxThere()) && !(await dockerInspect("container", candidate)) ? true : undefined,
      60_000,
    );

  /** the `deployment` events naming `id` (one per deployment that ended well) */
  const deploymentEvents = async (id: string) => {
    const res = await alice.api.get(`/api/pods/${pod}/events?type=deployment&limit=200`);
    expect(res.status).toBe(200);
    return (res.body.events as { metadata?: string }[]).filter(
      (e) => e.metadata && (JSON.parse(e.metadata) as { deployment_id?: string }).deployment_id === id,
    ).length;
  };

  /**
   * Runs `start` (a deploy or a rollback) with `fault` applied at its own point, then checks: it ends
   * `success` within ENDS_WITHIN_MS, once, the page serves `text`, and no Docker object more.
   */
  const through = async (
    start: () => Promise<string>,
    text: () => string,
    fault: (id: string, since: number) => Promise<void>,
    before?: () => Promise<void>,
  ) => {
    await helpersGone(); // the last deployment's box is held a moment for requests in flight
    const objects = await dockerObjects(stack.prefix);
    const since = Date.now();
    await before?.();
    const id = await start();
    await fault(id, since);
    const faulted = Date.now();
    const end = await settled(id);
    expect(end, JSON.stringify(end)).toMatchObject({ status: "success" });
    console.info(`the deployment ended ${Math.round((Date.now() - faulted) / 1000)} s after the fault`);
    await serves(text());
    expect(await deploymentEvents(id)).toBe(1);
    // its release is the one ~/app points at; the build box and the candidate went
    expect(await podSh(alice.api, pod, "readlink ~/app")).toMatch(/^(.*\/)?releases\/dep_/);
    await helpersGone();
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    return id;
  };

  const deployNext = async () => {
    const text = `v${++version}`;
    await server.commit(repo, nodeApp(text), { message: text });
    const res = await alice.api.post(`/api/pods/${pod}/git/deploy`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return { id: res.body.id as string, text };
  };

  /** a deploy of a new commit with `fault`: its release is served, and ~/app is that release */
  const deployThrough = async (
    fault: (id: string, since: number) => Promise<void>,
    before?: () => Promise<void>,
  ) => {
    let text = "";
    const id = await through(
      async () => {
        const next = await deployNext();
        text = next.text;
        return next.id;
      },
      () => text,
      fault,
      before,
    );
    expect(await podSh(alice.api, pod, "readlink ~/app")).toContain(id);
  };

  /** until the deploy's build container exists: the host is mid-work on it */
  const buildBoxUp = () =>
    waitFor("the build container", async () => ((await buildBoxThere()) ? true : undefined), 120_000);

  it("the Worker restarted mid-deploy: success, once", { timeout: 600_000 }, () =>
    deployThrough(async () => {
      await buildBoxUp();
      await stack.restartWorker();
    }),
  );

  it(
    "the agent SIGKILLed before the command reaches it, started again: success, once",
    {
      timeout: 600_000,
    },
    () =>
      deployThrough(
        () => agentGoneBeforeDispatch(stack, alice.api).back(),
        () => agentGoneBeforeDispatch(stack, alice.api).away(),
      ),
  );

  it(
    "the agent SIGKILLed mid-deploy (its build container up), started again: success, once",
    {
      timeout: 600_000,
    },
    () =>
      deployThrough(async () => {
        await buildBoxUp();
        await crashAgent(stack);
      }),
  );

  it(
    "the agent SIGKILLed after the deploy's work, at its answer, started again: success, once",
    {
      timeout: 600_000,
    },
    () =>
      deployThrough(async (_id, since) => {
        await agentReaches(stack.agent, "command done", { op: "pod.deploy", pod }, 180_000, since);
        await crashAgent(stack);
      }),
  );

  /** the text the rollback's target serves: its commit's message (deployNext commits it as such) */
  let target = "";
  let targetId = "";
  const rollBack = async () => {
    const res = await alice.api.post(`/api/pods/${pod}/git/rollback`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const of = await alice.api.get(`/api/pods/${pod}/git/deployments/${res.body.rollback_of}`);
    expect(of.status, JSON.stringify(of.body)).toBe(200);
    target = of.body.commit_message as string;
    // a rollback's target may itself be a rollback: the release served is that one's target's
    let release = of.body;
    while (release.rollback_of)
      release = (await alice.api.get(`/api/pods/${pod}/git/deployments/${release.rollback_of}`)).body;
    targetId = release.id as string;
    return res.body.id as string;
  };
  /** until the rollback's build box or its candidate exists (a rollback's work is short) */
  const rollbackUnderWay = () =>
    waitFor(
      "the rollback's box or candidate",
      async () =>
        (await buildBoxThere()) || (await dockerInspect("container", candidate)) ? true : undefined,
      120_000,
    );

  it("the agent SIGKILLed mid-rollback (its box up), started again: rolled back, once", {
    timeout: 600_000,
  }, async () => {
    await through(
      rollBack,
      () => target,
      async () => {
        await rollbackUnderWay();
        await crashAgent(stack);
      },
    );
    expect(await podSh(alice.api, pod, "readlink ~/app")).toContain(targetId);
  });

  it("the Worker restarted mid-rollback: rolled back, once", { timeout: 600_000 }, async () => {
    // a rollback goes back to the release before the serving one: deploy again, then roll back
    await deployThrough(async () => undefined);
    await through(
      rollBack,
      () => target,
      async () => {
        await rollbackUnderWay();
        await stack.restartWorker();
      },
    );
    expect(await podSh(alice.api, pod, "readlink ~/app")).toContain(targetId);
  });
});
