import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { dockerInspect } from "./support/docker";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

/**
 * Pod creation is a Workflow: it must end `running` (or `error` with a reason) whatever happens to
 * the processes around it while it runs. Worker + agent + Docker + nginx, driven by the public API.
 */
describe("pod creation survives its surroundings (Workflows)", () => {
  let stack: Stack;
  let alice: User;
  const podName = (tag: string) => `${tag}-${stack.prefix.slice(-4)}`;

  const eventTypes = async (name: string) =>
    ((await alice.api.get(`/api/pods/${name}/events`)).body.events as { type: string }[])
      .map((e) => e.type)
      .reverse();

  beforeAll(async () => {
    stack = await startStack("wf");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("a create whose Worker is stopped and started again mid-operation still ends running", {
    timeout: 120_000,
  }, async () => {
    const name = podName("wrestart");
    const res = await alice.api.post("/api/pods", { name, preset: "nodejs" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    // The host is at work on it (its container exists) when the control plane goes away.
    await waitFor("the container", async () =>
      (await dockerInspect("container", `${stack.prefix}-${name}`)) ? true : undefined,
    );
    await stack.restartWorker();
    const pod = await waitForPodStatus(alice.api, name, "running", 90_000);
    expect(pod.status).toBe("running");
    expect((await httpGet(stack.edgePort, `${name}.pods.localhost`)).status).toBe(200);
    const types = await waitFor("the started event", async () => {
      const t = await eventTypes(name);
      return t.includes("started") ? t : undefined;
    });
    expect(types).toEqual(["created", "progress", "started"]);
  });

  it("a create whose agent is killed mid-operation ends running once the agent is back", {
    timeout: 120_000,
  }, async () => {
    await waitForHostOnline(alice.api);
    const name = podName("akill");
    // nodejs: its app takes a moment to listen, so the kill lands while the agent waits for it
    const res = await alice.api.post("/api/pods", { name, preset: "nodejs" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitFor("the container", async () =>
      (await dockerInspect("container", `${stack.prefix}-${name}`)) ? true : undefined,
    );
    await stack.agent.kill();
    await stack.startAgent();
    // Bound: the host's return window (5 min) after the command's own timeout; here the agent is
    // back in seconds and the re-sent command adopts the container the killed agent made.
    const pod = await waitForPodStatus(alice.api, name, "running", 60_000);
    expect(pod.status).toBe("running");
    expect((await httpGet(stack.edgePort, `${name}.pods.localhost`)).status).toBe(200);
    expect((await eventTypes(name)).filter((t) => t === "started")).toHaveLength(1);
  });
});
