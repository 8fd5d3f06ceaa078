import { readFile, rm, writeFile } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDockerClient } from "../../agent/docker/client";
import { watchDockerEvents } from "../../agent/docker/events";
import { execInContainer } from "../../agent/docker/exec";
import { podNames } from "../../agent/docker/naming";
import { AgentError } from "../../agent/errors";
import { createHandlers } from "../../agent/handlers/pods";
import type { PodState } from "../../shared/protocol";
import { type Agent, DOCKER_SOCKET, podSpec, startAgent, until } from "./helpers";

/** The events watcher: crashes and engine-side restarts reach the control plane; engine outages are survived. */

interface Seen {
  pod: PodState;
  reason?: string;
}

let agent: Agent;
const watchers: AbortController[] = [];

function watch(deps: Agent = agent): Seen[] {
  const seen: Seen[] = [];
  const ac = new AbortController();
  watchers.push(ac);
  void watchDockerEvents(deps, { podStatus: (pod, reason) => seen.push({ pod, reason }) }, ac.signal);
  return seen;
}

const saw = (seen: Seen[], name: string, state: string, from = 0) =>
  until(async () => seen.slice(from).some((s) => s.pod.name === name && s.pod.state === state), 15_000, 50);

/** A unix socket in front of the engine's, which the test can take down and bring back: an engine outage. */
class SocketProxy {
  private server: Server | null = null;
  private readonly conns = new Set<Socket>();
  constructor(readonly path: string) {}

  async up(): Promise<void> {
    await rm(this.path, { force: true });
    const server = createServer((client) => {
      const upstream = connect(DOCKER_SOCKET);
      this.conns.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.conns.delete(client);
        this.conns.delete(upstream);
      };
      client.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
    });
    await new Promise<void>((resolve) => server.listen(this.path, resolve));
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const c of this.conns) c.destroy();
    this.conns.clear();
    if (server) await new Promise((resolve) => server.close(resolve));
    await rm(this.path, { force: true });
  }
}

beforeAll(async () => {
  agent = await startAgent();
});

afterAll(async () => {
  for (const ac of watchers) ac.abort();
  await agent?.cleanup();
});

describe("watchDockerEvents", () => {
  it("reports a crash and the engine bringing the pod back, re-rendering a stale vhost", async () => {
    const seen = watch();
    await agent.handlers["pod.create"](podSpec("crashy"), agent.ctx);
    await saw(seen, "crashy", "running");
    const ip = (await agent.handlers["pod.inspect"]({ name: "crashy" }, agent.ctx)).ip;
    // pretend the address changed under us: the restart must point the vhost back at the pod
    const vhostPath = agent.ingress.vhostPath("crashy");
    await writeFile(vhostPath, (await readFile(vhostPath, "utf8")).replace(`${ip}:`, "10.255.255.1:"));

    const from = seen.length;
    const container = podNames(agent.config.namePrefix, "crashy").container;
    await execInContainer(agent.docker, container, ["pkill", "-KILL", "-f", "pod-init"]);
    expect(await saw(seen, "crashy", "stopped", from)).toBe(true);
    expect(await saw(seen, "crashy", "running", from)).toBe(true);
    const crash = seen.slice(from).find((s) => s.pod.state === "stopped");
    expect(crash?.reason).toMatch(/exited with code/);
    expect(await readFile(vhostPath, "utf8")).toContain(`server ${ip}:8080 max_fails=0;`);
  });

  it("reports stop, start and delete done through the handlers, each state once", async () => {
    const seen = watch();
    await agent.handlers["pod.stop"]({ name: "crashy" }, agent.ctx);
    await saw(seen, "crashy", "stopped");
    await agent.handlers["pod.start"]({ name: "crashy" }, agent.ctx);
    await saw(seen, "crashy", "running");
    await agent.handlers["pod.delete"]({ name: "crashy" }, agent.ctx);
    await saw(seen, "crashy", "missing");
    // (the stream starts at the current second, so the previous test's last event may come first)
    expect(seen.slice(-4).map((s) => s.pod.state)).toEqual(["stopped", "running", "stopped", "missing"]);
    expect(seen.at(-2)?.reason).toMatch(/exited with code 137/); // delete kills a running pod
  });

  it("survives an engine outage: handlers say unavailable, the stream resubscribes and catches up", async () => {
    const proxy = new SocketProxy(join(agent.stateDir, "docker-proxy.sock"));
    await proxy.up();
    const docker = createDockerClient(proxy.path);
    const viaProxy: Agent = { ...agent, docker };
    const handlers = createHandlers(viaProxy);
    const seen = watch(viaProxy);
    await handlers["pod.create"](podSpec("outage"), agent.ctx);
    await saw(seen, "outage", "running");

    await proxy.down();
    const err = await handlers["pod.inspect"]({ name: "outage" }, agent.ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).code).toBe("unavailable");
    // while the agent cannot see the engine, the pod stops
    await agent.handlers["pod.stop"]({ name: "outage" }, agent.ctx);
    await new Promise((r) => setTimeout(r, 500));

    await proxy.up();
    expect(await saw(seen, "outage", "stopped")).toBe(true);
    expect((await handlers["pod.start"]({ name: "outage" }, agent.ctx)).state).toBe("running");
    expect(await until(async () => seen.at(-1)?.pod.state === "running", 10_000, 50)).toBe(true);
    await proxy.down();
  });
});
