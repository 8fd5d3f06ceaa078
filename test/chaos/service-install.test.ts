import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { dockerInspect } from "../e2e/support/docker";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { dockerObjects, mentioning, printOnFailure } from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * A database service's install under faults (docs/reliability.md): the agent SIGKILLed, or the
 * Worker restarted, once the service's volume exists on the host (mid-install, seen in Docker). The
 * install ends `running` (or `error` with its reason) and made one sidecar and one volume, no more.
 */
describe("chaos: service install", () => {
  let stack: Stack;
  let alice: User;
  let n = 0;
  const ENDS_WITHIN_MS = 240_000;

  beforeAll(async () => {
    stack = await startStack("chaossv");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
  });

  // a failure shows what the host did: its log lines about the install
  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/service/)));

  const installThrough = async (fault: () => Promise<void>) => {
    const pod = `chaos-sv${++n}-${stack.prefix.slice(-4)}`;
    const made = await alice.api.post("/api/pods", { name: pod, preset: "nodejs", plan_slug: "build" });
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    await waitForPodStatus(alice.api, pod, "running");
    const before = await dockerObjects(stack.prefix);
    const res = await alice.api.post(`/api/pods/${pod}/services`, { service_type: "redis" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitFor(
      "the service's volume",
      async () => ((await dockerInspect("volume", `${stack.prefix}-${pod}-svc-redis`)) ? true : undefined),
      120_000,
    );
    await fault();
    const service = await waitFor(
      "the install to end",
      async () => {
        const list = (await alice.api.get(`/api/pods/${pod}/services`)).body as {
          status: string;
          error_msg?: string;
        }[];
        const s = list?.[0];
        return s && s.status !== "installing" ? s : undefined;
      },
      ENDS_WITHIN_MS,
    );
    expect(service, JSON.stringify(service)).toMatchObject({ status: "running" });
    const after = await dockerObjects(stack.prefix);
    expect(after.containers.length).toBe(before.containers.length + 1);
    expect(after.volumes.length).toBe(before.volumes.length + 1);
    expect(after.networks).toEqual(before.networks);
  };

  it("the agent SIGKILLed mid-install, started again: running, one sidecar", { timeout: 600_000 }, () =>
    installThrough(async () => {
      await stack.agent.kill();
      await stack.startAgent();
    }),
  );

  it("the Worker restarted mid-install: running, one sidecar", { timeout: 600_000 }, () =>
    installThrough(() => stack.restartWorker()),
  );
});
