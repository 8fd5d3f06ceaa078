import { createHash } from "node:crypto";
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
  eventCount,
  mentioning,
  podSh,
  printOnFailure,
  r2Keys,
  servedThroughEdge,
  within,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/** A request that makes a pod with files in `~/app` through the create workflow (from-zip, import). */
export interface CreateLike {
  /** the describe's title */
  title: string;
  /** the stack's name (startStack) */
  stackName: string;
  /** a short tag in the pods' names */
  tag: string;
  /** the request as the tests' names say it: "a from-zip", "an import" */
  request: string;
  /** the files as the tests' names say them: "the archive's files" */
  contents: string;
  /** what `~/app` must hold byte for byte once the pod runs; its index.html serves `served` */
  files: Record<string, Uint8Array | string>;
  served: string;
  /** the event the request leaves once beside `started`: `zip_uploaded`, `imported` */
  event: string;
  /** what of the agent's lines a failure prints */
  agentLines: RegExp;
  /** runs before the stack starts (e.g. building the archive, starting a site to import) */
  prepare?: () => Promise<void>;
  /** runs once the stack has stopped (what `prepare` started) */
  cleanup?: () => Promise<void>;
  /**
   * For a request whose Worker does slow work before its 202 (a URL import's fetch): `hold` makes
   * that work wait (the site holds its next answer) and resolves once it does; `release` lets it go.
   * The Worker is restarted in between.
   */
  cutBefore202?: { what: string; hold: () => Promise<void>; release: () => void };
  /** asks for a new pod `name`: answers the status and the body */
  ask: (stack: Stack, user: User, name: string) => Promise<{ status: number; body: { error?: string } }>;
}

/** the time a request may take to end once the fault is over: the agent's return, a re-sent command */
const ENDS_WITHIN_MS = 240_000;

/**
 * The fault sequence a create-like request goes through (docs/reliability.md): asked while the host
 * is away (refused, nothing staged), the agent SIGKILLed as the 202 comes back, once the pod's
 * container exists (the files going into it), and after the work at its `command done` line; the
 * Worker restarted once the container exists. Each ends `running` once (one `started` and one
 * `like.event` event; one container, volume and network more), `~/app` holds the files byte for
 * byte, the pod is served, and no staged archive is left in R2.
 */
export function describeCreateLikeUnderFaults(like: CreateLike) {
  const sha = (d: Uint8Array | string) => createHash("sha256").update(d).digest("hex");
  const names = Object.keys(like.files).sort();
  const expected = names.map((f) => `${sha(like.files[f] as Uint8Array | string)}  ${f}`).join("\n");

  describe(like.title, () => {
    let stack: Stack;
    let alice: User;
    let n = 0;

    beforeAll(async () => {
      await like.prepare?.();
      stack = await startStack(like.stackName);
      alice = await signUp(stack.api, "Alice");
      await waitForHostOnline(alice.api);
    }, 600_000);

    afterAll(async () => {
      await stack?.stop();
      await like.cleanup?.();
    });

    afterEach((ctx) => printOnFailure(ctx, stack, mentioning(like.agentLines)));

    const nextName = () => `chaos-${like.tag}${++n}-${stack.prefix.slice(-4)}`;
    const ask = (name: string) => like.ask(stack, alice, name);

    /**
     * Starts the request for a new pod, applies `fault`, and checks that it ends running once with the
     * files, one container, volume and network more, served, and no staged archive left.
     */
    const through = async (fault: (name: string, since: number) => Promise<void>) => {
      const name = nextName();
      const objects = await dockerObjects(stack.prefix);
      const staged = await r2Keys(stack);
      const since = Date.now();
      const made = await ask(name);
      expect(made.status, JSON.stringify(made.body)).toBe(202);
      await fault(name, since);
      await endsRunningOnce(alice.api, stack.prefix, name, objects, ENDS_WITHIN_MS);
      expect(await eventCount(alice.api, name, like.event)).toBe(1);
      expect(await podSh(alice.api, name, `cd ~/app && sha256sum ${names.join(" ")}`)).toBe(expected);
      // the workflow's last step discards the staged archive: the pod may be running a moment before
      await waitFor(
        "the staged archive to go",
        async () => (JSON.stringify(await r2Keys(stack)) === JSON.stringify(staged) ? true : undefined),
        60_000,
      );
      await servedThroughEdge(stack, name, { shows: like.served });
    };

    /** until the new pod's container exists: the host is mid-work, the files going into it */
    const containerUp = (name: string) =>
      waitFor(
        "the pod's container",
        async () => ((await dockerInspect("container", `${stack.prefix}-${name}`)) ? true : undefined),
        120_000,
      );

    it(`asked while its host is away: 503 naming it, no pod, nothing staged; once back, ${like.request} killed as its 202 comes back ends running once`, {
      timeout: 600_000,
    }, async () => {
      const objects = await dockerObjects(stack.prefix);
      const staged = await r2Keys(stack);
      const gone = agentGoneBeforeDispatch(stack, alice.api);
      await gone.away();
      const name = nextName();
      try {
        const refused = await ask(name);
        expect(refused.status, JSON.stringify(refused.body)).toBe(503);
        expect(refused.body.error).toBeTruthy();
        expect((await within(alice.api.get(`/api/pods/${name}`))).status).toBe(404);
        expect(await r2Keys(stack)).toEqual(staged);
      } finally {
        await gone.back(0);
      }
      await waitForHostOnline(alice.api);
      expect(await dockerObjects(stack.prefix)).toEqual(objects);
      await through(() => crashAgent(stack));
    });

    const cut = like.cutBefore202;
    if (cut)
      it(`the Worker restarted ${cut.what}: the request cut, no pod, nothing staged; asked again, running once`, {
        timeout: 600_000,
      }, async () => {
        const objects = await dockerObjects(stack.prefix);
        const staged = await r2Keys(stack);
        const name = nextName();
        const held = cut.hold();
        const asked = ask(name).catch((e: unknown) => ({ status: 0, body: { error: String(e) } }));
        try {
          await held;
          await stack.restartWorker();
        } finally {
          cut.release();
        }
        const answer = await asked;
        // the connection breaks, or the front answers for the Worker that went: never a 202
        expect(answer.status, JSON.stringify(answer.body)).not.toBe(202);
        console.info(`the cut request answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        expect((await within(alice.api.get(`/api/pods/${name}`))).status).toBe(404);
        expect(await r2Keys(stack)).toEqual(staged);
        expect(await dockerObjects(stack.prefix)).toEqual(objects);
        await through(async () => undefined);
      });

    it(
      `the agent SIGKILLed once the container exists (unpacking), started again: running once, ${like.contents}`,
      {
        timeout: 600_000,
      },
      () =>
        through(async (name) => {
          await containerUp(name);
          await crashAgent(stack);
        }),
    );

    it(
      `the Worker restarted once the container exists: running once, ${like.contents}`,
      {
        timeout: 600_000,
      },
      () =>
        through(async (name) => {
          await containerUp(name);
          await stack.restartWorker();
        }),
    );

    it(
      "the agent SIGKILLed after the work, at its answer, started again: running once",
      {
        timeout: 600_000,
      },
      () =>
        through(async (name, since) => {
          await agentReaches(stack.agent, "command done", { op: "pod.create", pod: name }, 180_000, since);
          await crashAgent(stack);
        }),
    );
  });
}
