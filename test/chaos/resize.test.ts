import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Reply } from "../e2e/support/api";
import { signUp } from "../e2e/support/api";
import { dockerInspect } from "../e2e/support/docker";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { agentReaches, crashAgent, printOnFailure, waitForHostAway } from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

const MIB = 1024 * 1024;

/**
 * A resize under faults (docs/reliability.md). A resize is one request, not a Workflow: the Worker
 * sends `pod.resize` and answers with what the host said. With the host away it is refused (503
 * naming the server) and nothing changes; with the agent SIGKILLed at the resize's `command done`
 * line (the limits applied, the answer maybe lost) the caller hears 200 or 503, and asking again once
 * the host is back leaves the plan the API shows and the container's limits in agreement.
 */
describe("chaos: resize", () => {
  let stack: Stack;
  let alice: User;
  let pod: string;

  beforeAll(async () => {
    stack = await startStack("chaosrz");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-rz-${stack.prefix.slice(-4)}`;
    const made = await alice.api.post("/api/pods", { name: pod, preset: "nodejs", plan_slug: "build" });
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    await waitForPodStatus(alice.api, pod, "running", 180_000);
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, (l) => l.op === "pod.resize"));

  /** the plan the API shows (the pod's view asks its host live: a 503 while it says hello again) */
  const plan = () =>
    waitFor(
      "the pod's view",
      async () => {
        const res = await alice.api.get(`/api/pods/${pod}`);
        return res.status === 200 ? (res.body.plan_slug as string) : undefined;
      },
      60_000,
    );
  const memoryMb = async () =>
    ((await dockerInspect("container", `${stack.prefix}-${pod}`))?.HostConfig.Memory ?? 0) / MIB;
  const resize = (plan_slug: string) => alice.api.post(`/api/pods/${pod}/resize`, { plan_slug });

  it("the host away: 503 naming the server, the plan and the container's limits unchanged", {
    timeout: 300_000,
  }, async () => {
    expect(await plan()).toBe("build");
    expect(await memoryMb()).toBe(1024);
    await stack.agent.kill();
    await waitForHostAway(alice.api);
    const res = await resize("launch");
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.error).toMatch(/server .* (offline|unavailable)/);
    expect(await memoryMb()).toBe(1024);
    await stack.startAgent();
    await waitForHostOnline(alice.api);
    // the pod's view asks its host live: read once the host is back
    expect(await plan()).toBe("build");
    expect(await memoryMb()).toBe(1024);
  });

  it("the agent SIGKILLed once the limits are applied, at its answer: asked again, the plan and the limits agree", {
    timeout: 300_000,
  }, async () => {
    const since = Date.now();
    const answer: Promise<Reply> = resize("launch");
    await agentReaches(stack.agent, "command done", { op: "pod.resize", pod }, 60_000, since);
    await crashAgent(stack);
    const first = await answer;
    expect([200, 503], JSON.stringify(first.body)).toContain(first.status);
    if (first.status === 503) expect(first.body.error).toBeTruthy();
    // the caller asks again until the host takes it (a 503 while the agent says hello again)
    const again = await waitFor(
      "the resize to be taken",
      async () => {
        const r = await resize("launch");
        return r.status === 200 ? r : undefined;
      },
      120_000,
    );
    expect(again.body.plan_slug).toBe("launch");
    expect(await plan()).toBe("launch");
    expect(await memoryMb()).toBe(512);
    await waitForPodStatus(alice.api, pod, "running", 60_000);
  });
});
