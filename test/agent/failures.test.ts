import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../agent/config";
import { createDockerClient } from "../../agent/docker/client";
import { podNames, prefixFilter } from "../../agent/docker/naming";
import { AgentError } from "../../agent/errors";
import { createHandlers } from "../../agent/handlers/pods";
import { type Agent, podSpec, startAgent } from "./helpers";

/** Failure paths: every one must end as an AgentError with the right code and leave nothing behind. */

let agent: Agent;

const rejectsWith = async (p: Promise<unknown>, code: string, message?: RegExp) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentError);
  expect((err as AgentError).code).toBe(code);
  if (message) expect((err as AgentError).message).toMatch(message);
};

/** Everything with the agent's prefix, for "nothing left behind" checks. */
async function leftovers(): Promise<string[]> {
  const filters = prefixFilter(agent.config.namePrefix);
  const c = await agent.docker.listContainers({ all: true, filters });
  const v = (await agent.docker.listVolumes({ filters })).Volumes ?? [];
  const n = await agent.docker.listNetworks({ filters });
  return [...c.flatMap((x) => x.Names), ...v.map((x) => x.Name), ...n.map((x) => x.Name)];
}

beforeAll(async () => {
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.cleanup();
});

describe("image missing", () => {
  it("fails create with unavailable and creates nothing", async () => {
    const handlers = createHandlers({
      ...agent,
      config: { ...agent.config, images: { ...agent.config.images, static: "podhost/no-such-image:latest" } },
    });
    await rejectsWith(
      handlers["pod.create"](podSpec("noimage"), agent.ctx),
      "unavailable",
      /image podhost\/no-such-image:latest not present on this host/,
    );
    expect(await leftovers()).toEqual([]);
  });
});

describe("a failure mid-way", () => {
  it("removes the network and volume it created when the container cannot be made", async () => {
    // The base image has no CMD: network and volume get created, then createContainer fails.
    const base = (await agent.docker.listImages({ filters: { reference: ["podhost/base"] } }))[0]
      ?.RepoTags?.[0];
    expect(base).toBeTruthy();
    const handlers = createHandlers({
      ...agent,
      config: { ...agent.config, images: { ...agent.config.images, static: base ?? "" } },
    });
    await rejectsWith(handlers["pod.create"](podSpec("halfway"), agent.ctx), "internal");
    expect(await leftovers()).toEqual([]);
    expect(await agent.ingress.hasVhost("halfway")).toBe(false);
  });

  it("rejects bad spec values before touching the engine", async () => {
    const bad = [
      podSpec("badenv", { env: { "NOT A KEY": "x" } }),
      podSpec("badworker", { workers: [{ name: "../../etc", command: "x" }] }),
      podSpec("badcron", { cronJobs: [{ schedule: "* * * * *", command: "a\n* * * * * b" }] }),
      podSpec("badkey", { authorizedKeys: ["ssh-ed25519 AAA\ncommand=evil"] }),
      podSpec("baddomain", { domain: "x.test; include /etc/passwd" }),
    ];
    for (const spec of bad) await rejectsWith(agent.handlers["pod.create"](spec, agent.ctx), "bad_request");
    expect(await leftovers()).toEqual([]);
  });
});

describe("someone else's pod with the same name", () => {
  it("is not adopted: conflict", async () => {
    await agent.handlers["pod.create"](podSpec("taken"), agent.ctx);
    await rejectsWith(
      agent.handlers["pod.create"](podSpec("taken", { podId: "pod_other" }), agent.ctx),
      "conflict",
    );
    expect((await agent.handlers["pod.inspect"]({ name: "taken" }, agent.ctx)).state).toBe("running");
    await agent.handlers["pod.delete"]({ name: "taken" }, agent.ctx);
  });
});

describe("container removed behind the agent's back", () => {
  beforeAll(async () => {
    await agent.handlers["pod.create"](podSpec("ghost"), agent.ctx);
    await agent.docker
      .getContainer(podNames(agent.config.namePrefix, "ghost").container)
      .remove({ force: true });
  });

  it("inspect says missing; start, stop, restart and resize say not_found", async () => {
    expect(await agent.handlers["pod.inspect"]({ name: "ghost" }, agent.ctx)).toEqual({
      name: "ghost",
      state: "missing",
      ip: null,
    });
    const p = { name: "ghost" };
    await rejectsWith(agent.handlers["pod.start"](p, agent.ctx), "not_found");
    await rejectsWith(agent.handlers["pod.stop"](p, agent.ctx), "not_found");
    await rejectsWith(agent.handlers["pod.restart"](p, agent.ctx), "not_found");
    const limits = { cpu: 1, memoryMb: 256, diskGb: 1, pids: 64 };
    await rejectsWith(agent.handlers["pod.resize"]({ ...p, limits }, agent.ctx), "not_found");
    await rejectsWith(
      agent.handlers["pod.clone"]({ source: "ghost", spec: podSpec("ghost-copy") }, agent.ctx),
      "not_found",
    );
  });

  it("delete removes the rest (volume, network, vhost)", async () => {
    expect(await agent.handlers["pod.delete"]({ name: "ghost" }, agent.ctx)).toEqual({ deleted: true });
    expect(await leftovers()).toEqual([]);
    expect(await agent.ingress.hasVhost("ghost")).toBe(false);
  });
});

describe("engine unreachable", () => {
  it("every docker-backed op fails with unavailable, without throwing anything else", async () => {
    const config = loadConfig({ ...process.env, PODHOST_DOCKER_SOCKET: "/nonexistent/docker.sock" });
    const handlers = createHandlers({ ...agent, config, docker: createDockerClient(config.dockerSocket) });
    const p = { name: "whatever" };
    const limits = { cpu: 1, memoryMb: 256, diskGb: 1, pids: 64 };
    const calls: (() => Promise<unknown>)[] = [
      () => handlers["host.inventory"]({}, agent.ctx),
      () => handlers["pod.create"](podSpec("whatever"), agent.ctx),
      () => handlers["pod.clone"]({ source: "whatever", spec: podSpec("other") }, agent.ctx),
      () => handlers["pod.start"](p, agent.ctx),
      () => handlers["pod.stop"](p, agent.ctx),
      () => handlers["pod.restart"](p, agent.ctx),
      () => handlers["pod.inspect"](p, agent.ctx),
      () => handlers["pod.delete"](p, agent.ctx),
      () => handlers["pod.resize"]({ ...p, limits }, agent.ctx),
    ];
    for (const call of calls) await rejectsWith(call(), "unavailable", /docker engine unavailable/);
    expect(await handlers["host.ping"]({}, agent.ctx)).toEqual({ pong: true });
  });
});
