import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AgentConfig, loadConfig } from "../../agent/config";
import { prepareHostCache } from "../../agent/disk/host-cache";
import { createDockerClient, type DockerClient } from "../../agent/docker/client";
import { execInContainer } from "../../agent/docker/exec";
import { LABEL_PREFIX, prefixFilter } from "../../agent/docker/naming";
import type { HandlerDeps } from "../../agent/handlers/deps";
import { KeyedLock } from "../../agent/handlers/keyed-lock";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerContext, HandlerTable } from "../../agent/handlers/types";
import { Ingress } from "../../agent/ingress/nginx";
import { createLogger } from "../../agent/logger";
import { type SshGateway, startSshGateway } from "../../agent/ssh/gateway";
import { type OpParams, PodSpec } from "../../shared/protocol";
import { edgeGet } from "../support/edge";
import { removePodDisks, testPodDisk } from "../support/pod-disk";

export const DOCKER_SOCKET = "/var/run/docker.sock";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

export interface Agent extends HandlerDeps {
  handlers: HandlerTable;
  /** the SSH gateway, when asked for (`startAgent(env, { ssh: true })`), listening on 127.0.0.1 */
  gateway?: SshGateway;
  ctx: HandlerContext;
  stateDir: string;
  port: number;
  /** remove every container, volume and network of this prefix, stop nginx, delete the state dir */
  cleanup(): Promise<void>;
}

/** A whole agent minus the connection: unique name prefix, temp state dir, nginx on a free port. */
export async function startAgent(
  env: Record<string, string> = {},
  opts: { ssh?: boolean } = {},
): Promise<Agent> {
  const stateDir = await mkdtemp(join(tmpdir(), "podhost-agent-test-"));
  const port = await freePort();
  const prefix = `pht${Math.random().toString(36).slice(2, 8)}`;
  const config: AgentConfig = loadConfig({
    PODHOST_STATE_DIR: stateDir,
    PODHOST_INGRESS_LISTEN: `127.0.0.1:${port}`,
    PODHOST_NAME_PREFIX: prefix,
    PODHOST_DOCKER_SOCKET: DOCKER_SOCKET,
    PODHOST_SSH_LISTEN_HOST: "127.0.0.1",
    // the git server double serves plain http on 127.0.0.1 (test/support/git-server.ts)
    PODHOST_ALLOW_HTTP_GIT_LOOPBACK: "true",
    ...env,
  });
  // Tests run with disk limits on, as production does: a host without its pod disk fails here.
  if (config.podDiskRoot) await testPodDisk().check();
  // ...and with the host's fetch caches in their own limited subvolume (agent/disk/host-cache.ts)
  config.cacheDir = await prepareHostCache(config);
  const log = createLogger({ test: prefix }, true);
  const docker = createDockerClient(config.dockerSocket);
  const ingress = new Ingress({ stateDir, listen: config.ingressListen, edgeSecret: TEST_EDGE_SECRET, log });
  await ingress.start();
  const gateway = opts.ssh
    ? await startSshGateway({
        docker,
        namePrefix: prefix,
        listenHost: config.sshListenHost,
        idleTimeoutMs: config.sshIdleTimeoutMs,
        stateDir,
        log,
      })
    : undefined;
  const deps: HandlerDeps = { config, docker, ingress, log, locks: new KeyedLock(), ssh: gateway };
  const handlers = createHandlers(deps);
  const ctx: HandlerContext = { signal: new AbortController().signal, log };
  return {
    ...deps,
    handlers,
    gateway,
    ctx,
    stateDir,
    port,
    cleanup: async () => {
      await gateway?.stop();
      await removePrefix(docker, prefix);
      await ingress.stop();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

export async function removePrefix(docker: DockerClient, prefix: string): Promise<void> {
  const filters = prefixFilter(prefix);
  for (const c of await docker.listContainers({ all: true, filters })) {
    // a git deploy removes its candidate and build containers a moment after it answers: gone is fine
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch((err: { statusCode?: number }) => {
        if (err.statusCode !== 404) throw err;
      });
  }
  const { Volumes } = await docker.listVolumes({ filters });
  for (const v of Volumes ?? []) await docker.getVolume(v.Name).remove();
  for (const n of await docker.listNetworks({ filters })) await docker.getNetwork(n.Id).remove();
  await removePodDisks(prefix);
}

export function podSpec(name: string, over: Partial<OpParams<"pod.create">> = {}): PodSpec {
  return PodSpec().parse({
    podId: `pod_${name.replace(/-/g, "")}`,
    name,
    preset: "static",
    port: 8080,
    domain: `${name}.pods.test`,
    // Only listened on where a test starts the SSH gateway (and then it passes a free port).
    sshPort: 2222,
    limits: { cpu: 0.5, memoryMb: 256, diskGb: 5, pids: 128 },
    ...over,
  });
}

export type { HttpResult } from "../support/http";

/** the edge secret every agent test's ingress is given (an agent's own is derived from its token) */
export const TEST_EDGE_SECRET = "7e57".repeat(16);

/** GET through the test ingress on `port` as the edge would ask it (signed, test/support/edge.ts) */
export const httpGet = (port: number, host: string, path = "/") =>
  edgeGet(port, host, path, TEST_EDGE_SECRET);

/** Poll `fn` until it returns a truthy value (or `timeoutMs` passes, then the last result/throw). */
export async function until<T>(fn: () => Promise<T>, timeoutMs = 10_000, stepMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v || Date.now() > deadline) return v;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** a bash script run as pod_user in a running container, with its arguments; its stdout (throws on failure) */
export const podShell =
  (agent: Pick<Agent, "docker">, container: string) =>
  async (script: string, ...args: string[]) => {
    const r = await execInContainer(agent.docker, container, ["/bin/bash", "-c", script, "bash", ...args], {
      workingDir: "/home/pod_user",
    });
    if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}: ${r.stderr}`);
    return r.stdout;
  };

export const ms = (t0: number) => Math.round(performance.now() - t0);

/**
 * A bare container of `image` under `prefix`, sleeping, its home a volume of its own (as a pod's):
 * for tests of exec and transfers without the agent's create. `removePrefix` removes both.
 */
export async function startBareContainer(
  docker: DockerClient,
  names: { container: string; volume: string },
  prefix: string,
  image: string,
): Promise<void> {
  await docker.createVolume({ Name: names.volume, Labels: { [LABEL_PREFIX]: prefix } });
  const container = await docker.createContainer({
    name: names.container,
    Image: image,
    Entrypoint: ["/bin/sleep", "infinity"],
    Labels: { [LABEL_PREFIX]: prefix },
    HostConfig: { Mounts: [{ Type: "volume", Source: names.volume, Target: "/home/pod_user" }] },
  });
  await container.start();
}

/** How `p` settled within `ms`: "hung" when it had not. */
export function settledWithin(p: Promise<unknown>, ms: number): Promise<"resolved" | "rejected" | "hung"> {
  return Promise.race([
    p.then(
      () => "resolved" as const,
      () => "rejected" as const,
    ),
    new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), ms)),
  ]);
}
