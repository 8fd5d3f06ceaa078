import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDockerClient } from "../../agent/docker/client";
import { podNames } from "../../agent/docker/naming";
import { inspectContainer } from "../../agent/docker/resources";
import { buildBoxesOf, buildContainerOptions, startBuildBox } from "../../agent/git/build";
import { DOCKER_SOCKET, removePrefix, startAgent, startBareContainer } from "./helpers";

/**
 * A deploy's build container against the real engine: each deployment's box has a name of its own,
 * so the next deploy's box is made while the last one's still runs (held for its candidate's
 * requests in flight), and the earlier box is gone by the time the new one is handed out.
 */

const docker = createDockerClient(DOCKER_SOCKET);
const prefix = `bbox${process.pid.toString(36)}`;
const pod = "boxes";
const names = podNames(prefix, pod);
const image = "podhost/nodejs:latest";
const limits = { memoryBytes: 256 * 1024 * 1024, nanoCpus: 1e9, pids: 256, timeoutMs: 60_000 };

beforeAll(async () => {
  // the pod's container (its network namespace is what a box joins) with its home volume
  await startBareContainer(docker, names, prefix, image);
}, 60_000);

afterAll(async () => {
  await removePrefix(docker, prefix);
}, 60_000);

describe("build containers", () => {
  it("the next deployment's box has its own name; the earlier box, still held, is gone once it is ready", async () => {
    const main = await inspectContainer(docker, names.container);
    if (!main) throw new Error("no pod container");
    const first = await startBuildBox(
      docker,
      buildContainerOptions(prefix, pod, "dep_1", image, limits, main.Id),
      limits.timeoutMs,
    );
    first.holdFor(60_000); // a candidate in it would still be finishing requests
    expect((await inspectContainer(docker, first.id))?.State.Running).toBe(true);

    const second = await startBuildBox(
      docker,
      buildContainerOptions(prefix, pod, "dep_2", image, limits, main.Id),
      limits.timeoutMs,
    );
    expect(second.name).not.toBe(first.name);
    expect(second.id).not.toBe(first.id);
    expect(await inspectContainer(docker, first.id)).toBeNull();
    expect((await inspectContainer(docker, second.id))?.State.Running).toBe(true);
    expect(await buildBoxesOf(docker, prefix, pod)).toEqual([second.id]);
    await second.remove();
  }, 60_000);

  it("pod.delete removes a deploy's box whatever its deployment", async () => {
    const agent = await startAgent();
    try {
      const handlers = agent.handlers;
      const name = "boxdel";
      const n = podNames(agent.config.namePrefix, name);
      await startBareContainer(docker, n, agent.config.namePrefix, image);
      const main = await inspectContainer(docker, n.container);
      if (!main) throw new Error("no pod container");
      const box = await startBuildBox(
        docker,
        buildContainerOptions(agent.config.namePrefix, name, "dep_7", image, limits, main.Id),
        limits.timeoutMs,
      );
      await handlers["pod.delete"]({ name }, agent.ctx);
      expect(await inspectContainer(docker, box.id)).toBeNull();
    } finally {
      await agent.cleanup();
    }
  }, 60_000);
});
