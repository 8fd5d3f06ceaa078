import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { dockerInspect } from "../e2e/support/docker";
import { waitForHostOnline } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import {
  agentGoneBeforeDispatch,
  agentReaches,
  crashAgent,
  dockerObjects,
  endsRunningOnce,
  fingerprint,
  mentioning,
  podWithFiles,
  printOnFailure,
  servedThroughEdge,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A create and a clone under faults (docs/reliability.md): the agent SIGKILLed right after the
 * create's 202 (before or as the command reaches it), after the work at its `command done` line;
 * a clone with the agent SIGKILLed before the command reaches it, mid-copy (its clone helper
 * exists, seen in Docker) and after the work, and with the Worker restarted mid-copy. Each ends
 * `running` once: one `started` event, one container, volume and network more, the page served, a
 * clone's files those of its source. (The Worker restarted and the agent SIGKILLed once a create's
 * container exists are in test/e2e/pod-create.test.ts.)
 */
describe("chaos: create and clone", () => {
  let stack: Stack;
  let alice: User;
  let source: string;
  let sourceFiles: string;
  let n = 0;
  /** the time a create may take to end once the fault is over: the agent's return, a re-sent command */
  const ENDS_WITHIN_MS = 180_000;

  beforeAll(async () => {
    stack = await startStack("chaoscr");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    source = `chaos-src-${stack.prefix.slice(-4)}`;
    // incompressible, so a clone's copy takes a moment: long enough to cut it mid-way
    ({ files: sourceFiles } = await podWithFiles(
      alice.api,
      source,
      "nodejs",
      "cd ~/app && head -c 30000000 /dev/urandom > big.bin && mkdir -p notes && echo v1 > notes/a.md",
    ));
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/command|pod/)));

  const nextName = (tag: string) => `chaos-${tag}${++n}-${stack.prefix.slice(-4)}`;

  /**
   * Starts a create or clone of `name` (`start`), applies `fault`, and checks it ends running once,
   * with exactly one container, volume and network more than before, served through the edge.
   */
  const through = async (
    name: string,
    start: () => Promise<void>,
    fault: (since: number) => Promise<void>,
    before?: () => Promise<void>,
  ) => {
    const objects = await dockerObjects(stack.prefix);
    const since = Date.now();
    await before?.();
    await start();
    await fault(since);
    await endsRunningOnce(alice.api, stack.prefix, name, objects, ENDS_WITHIN_MS);
    await servedThroughEdge(stack, name);
  };

  const create = (name: string) => async () => {
    const res = await alice.api.post("/api/pods", { name, preset: "nodejs", plan_slug: "build" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
  };

  const clone = (name: string) => async () => {
    const res = await alice.api.post(`/api/pods/${source}/clone`, { new_name: name });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };

  /** a clone with `fault`: its files are its source's, and the source's are untouched */
  const cloneThrough = async (
    fault: (name: string, since: number) => Promise<void>,
    before?: () => Promise<void>,
  ) => {
    const name = nextName("cl");
    await through(name, clone(name), (since) => fault(name, since), before);
    expect(await fingerprint(alice.api, name)).toBe(sourceFiles);
    expect(await fingerprint(alice.api, source)).toBe(sourceFiles);
  };

  it("create: the agent SIGKILLed as the 202 comes back, started again: running, once", {
    timeout: 600_000,
  }, async () => {
    const name = nextName("cr");
    await through(name, create(name), async () => {
      await crashAgent(stack);
    });
  });

  it("create: the agent SIGKILLed after the work, at its answer, started again: running, once", {
    timeout: 600_000,
  }, async () => {
    const name = nextName("cr");
    await through(name, create(name), async (since) => {
      await agentReaches(stack.agent, "command done", { op: "pod.create", pod: name }, 120_000, since);
      await crashAgent(stack);
    });
  });

  it("clone: asked while its host is away, 503 naming the host and nothing made; once back, a clone killed as its 201 comes back ends running once", {
    timeout: 600_000,
  }, async () => {
    const objects = await dockerObjects(stack.prefix);
    const gone = agentGoneBeforeDispatch(stack, alice.api);
    await gone.away();
    const name = nextName("cl");
    const refused = await alice.api.post(`/api/pods/${source}/clone`, { new_name: name });
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error).toMatch(/offline/);
    expect((await alice.api.get(`/api/pods/${name}`)).status).toBe(404);
    await gone.back(0);
    await waitForHostOnline(alice.api);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    await cloneThrough(() => crashAgent(stack));
  });

  /** until the clone's helper (it streams the source's home into the new volume) exists */
  const copying = (name: string) =>
    waitFor(
      "the clone's helper",
      async () => ((await dockerInspect("container", `${stack.prefix}-${name}_clone`)) ? true : undefined),
      120_000,
    );

  it(
    "clone: the agent SIGKILLed mid-copy, started again: running once, the files whole",
    {
      timeout: 600_000,
    },
    () =>
      cloneThrough(async (name) => {
        await copying(name);
        await crashAgent(stack);
      }),
  );

  it("clone: the Worker restarted mid-copy: running once, the files whole", { timeout: 600_000 }, () =>
    cloneThrough(async (name) => {
      await copying(name);
      await stack.restartWorker();
    }),
  );

  it(
    "clone: the agent SIGKILLed after the work, at its answer, started again: running once",
    {
      timeout: 600_000,
    },
    () =>
      cloneThrough(async (name, since) => {
        await agentReaches(stack.agent, "command done", { op: "pod.clone", pod: name }, 120_000, since);
        await crashAgent(stack);
      }),
  );
});
