import type { ContainerInspectInfo } from "dockerode";
import type { PodState } from "../../shared/protocol";
import { AgentError } from "../errors";
import { type DockerClient, isConflict, isNotFound, isNotModified } from "./client";
import { framePayloads } from "./frames";
import { LABEL_POD_ID, podBridgeName } from "./naming";

/** Docker objects of one pod: find, make idempotently, remove quietly. */

export async function inspectContainer(
  docker: DockerClient,
  name: string,
): Promise<ContainerInspectInfo | null> {
  try {
    return await docker.getContainer(name).inspect();
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

export function containerIp(info: ContainerInspectInfo, network: string): string | null {
  const ip = info.NetworkSettings?.Networks?.[network]?.IPAddress;
  return ip ? ip : null;
}

/**
 * The address the engine gives the first container on a network it just made: the one after the
 * gateway, when the gateway is the subnet's first host (the default pools' layout; addresses are
 * taken lowest first). Null when the network says otherwise: the caller waits for the real one.
 */
export async function firstContainerAddress(docker: DockerClient, network: string): Promise<string | null> {
  const info = await docker.getNetwork(network).inspect();
  const config = (info.IPAM?.Config ?? [])[0] as { Subnet?: string; Gateway?: string } | undefined;
  const subnet = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(config?.Subnet ?? "");
  const gateway = config?.Gateway ?? "";
  if (!subnet || Number(subnet[5]) > 29) return null;
  const base = subnet.slice(1, 5).map(Number);
  const host = (n: number) => {
    const v =
      ((base[0] ?? 0) * 2 ** 24 + (base[1] ?? 0) * 2 ** 16 + (base[2] ?? 0) * 2 ** 8 + (base[3] ?? 0) + n) >>>
      0;
    return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
  };
  return gateway === host(1) ? host(2) : null;
}

export function podStateOf(pod: string, info: ContainerInspectInfo | null, network: string): PodState {
  if (!info) return { name: pod, state: "missing", ip: null };
  const running = info.State.Running && !info.State.Restarting;
  return {
    name: pod,
    state: running ? "running" : "stopped",
    ip: running ? containerIp(info, network) : null,
  };
}

/** Make sure a container object with this name belongs to `podId` (a same-named leftover of another pod must not be adopted). */
export function assertOwned(
  kind: string,
  name: string,
  labels: Record<string, string> | undefined,
  podId: string,
) {
  const owner = labels?.[LABEL_POD_ID];
  if (owner !== podId) {
    throw new AgentError(
      "conflict",
      `${kind} ${name} exists on this host for another pod (${owner ?? "unlabelled"})`,
    );
  }
}

/** Create the pod's bridge network unless it exists; true when this call created it. */
export async function ensureNetwork(
  docker: DockerClient,
  name: string,
  labels: Record<string, string>,
): Promise<boolean> {
  try {
    const info = await docker.getNetwork(name).inspect();
    assertOwned("network", name, info.Labels, labels[LABEL_POD_ID] ?? "");
    return false;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    await docker.createNetwork({
      Name: name,
      Driver: "bridge",
      CheckDuplicate: true,
      Internal: false,
      Attachable: false,
      Labels: labels,
      Options: {
        "com.docker.network.bridge.enable_icc": "true",
        // the egress rules match pod bridges by this name (./naming.ts)
        "com.docker.network.bridge.name": podBridgeName(name),
      },
    });
    return true;
  } catch (err) {
    if (isConflict(err)) return false; // created concurrently by a retry of the same command
    throw err;
  }
}

/**
 * Create the pod's home volume unless it exists; true when this call created it. `bindTo` makes the
 * directory a new volume is bound to (a limited subvolume, ../disk/pod-disk.ts); an existing volume
 * is adopted as it is. The engine seeds a bound local volume from the image as it does a plain one.
 */
export async function ensureVolume(
  docker: DockerClient,
  name: string,
  labels: Record<string, string>,
  bindTo?: () => Promise<string>,
): Promise<boolean> {
  try {
    const info = await docker.getVolume(name).inspect();
    assertOwned("volume", name, info.Labels ?? undefined, labels[LABEL_POD_ID] ?? "");
    return false;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const device = bindTo ? await bindTo() : undefined;
  await docker.createVolume({
    Name: name,
    Driver: "local",
    Labels: labels,
    ...(device ? { DriverOpts: { type: "none", o: "bind", device } } : {}),
  });
  return true;
}

const ignoreMissing = (err: unknown) => {
  if (!isNotFound(err)) throw err;
};

export const removeContainer = (docker: DockerClient, name: string) =>
  docker.getContainer(name).remove({ force: true, v: false }).catch(ignoreMissing);
export const removeVolume = (docker: DockerClient, name: string) =>
  docker.getVolume(name).remove().catch(ignoreMissing);
export const removeNetwork = (docker: DockerClient, name: string) =>
  docker.getNetwork(name).remove().catch(ignoreMissing);

export async function startContainer(docker: DockerClient, name: string): Promise<void> {
  await docker
    .getContainer(name)
    .start()
    .catch((err: unknown) => {
      if (!isNotModified(err)) throw err;
    });
}

export async function stopContainer(docker: DockerClient, name: string): Promise<void> {
  await docker
    .getContainer(name)
    .stop({ t: 10 })
    .catch((err: unknown) => {
      if (!isNotModified(err)) throw err;
    });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Poll until the container runs with an address on its network. A container that exits instead
 * (bad image, broken pod-init) fails with the tail of its log, so the caller sees why.
 */
export async function waitRunning(
  docker: DockerClient,
  name: string,
  network: string,
  signal?: AbortSignal,
  timeoutMs = 15_000,
): Promise<{ info: ContainerInspectInfo; ip: string }> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; ; i++) {
    const info = await inspectContainer(docker, name);
    if (!info) throw new AgentError("not_found", `container ${name} disappeared while starting`);
    const ip = containerIp(info, network);
    if (info.State.Running && !info.State.Restarting && ip) return { info, ip };
    if (info.State.Restarting || (!info.State.Running && info.State.Status === "exited")) {
      const tail = await containerLogTail(docker, name);
      throw new AgentError("internal", `container ${name} exited with ${info.State.ExitCode}: ${tail}`);
    }
    if (signal?.aborted) throw new AgentError("unavailable", `waiting for ${name} to run: aborted`);
    if (Date.now() > deadline)
      throw new AgentError("unavailable", `container ${name} not running after ${timeoutMs} ms`);
    await sleep(Math.min(10 * 2 ** i, 200));
  }
}

export async function containerLogTail(docker: DockerClient, name: string): Promise<string> {
  try {
    const buf = (await docker
      .getContainer(name)
      .logs({ stdout: true, stderr: true, tail: 10 })) as unknown as Buffer;
    // Non-TTY logs are multiplexed (./frames.ts).
    const parts = framePayloads(buf).map((p) => p.toString("utf8"));
    return parts.join("").trim().slice(-500) || "(no output)";
  } catch {
    return "(no log)";
  }
}
