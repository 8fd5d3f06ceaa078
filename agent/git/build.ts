import type { ContainerCreateOptions } from "dockerode";
import type { GitConfig } from "../config";
import { type DockerClient, isConflict } from "../docker/client";
import { POD_ISOLATION } from "../docker/isolation";
import { HOME, helperName, LABEL_PREFIX, podNames } from "../docker/naming";
import { LABEL_HELPER } from "../docker/pod-user";
import { inspectContainer, removeContainer, startContainer } from "../docker/resources";
import { AgentError } from "../errors";

/**
 * The build container: the pod's image, the pod's home volume and network, and limits of its own
 * (the pod's memory; CPU and pids from the agent's config: `buildLimitsFor`), uid 1000, no
 * capabilities, no-new-privileges, a read-only root with a tmpfs /tmp. It idles under tini while the
 * deploy runs its steps in it as execs (unpack, install, build, the release switch): each exec joins
 * the container's cgroup, so a build that forks or eats memory meets the build's limits, never the
 * serving pod's or the host's.
 * The wall clock is the deploy's: when it runs out the container is killed.
 */

/** what marks a deploy's containers (beside the prefix label) so a restarted agent finds leftovers */
export const LABEL_GIT_POD = "podhost.git.pod";
export const HELPER_BUILD = "git-build";
export const HELPER_CANDIDATE = "git-candidate";
/** the build container's CPU weight against the pods' 1024 */
export const BUILD_CPU_SHARES = 256;

/**
 * One name per deployment: the next deploy's box is made while the last one's is still going (held
 * for its candidate's requests in flight, then removed), instead of waiting for the name to be free.
 */
export const buildName = (prefix: string, pod: string, deployment: string) =>
  helperName(podNames(prefix, pod).container, `build-${deployment}`);
export const candidateName = (prefix: string, pod: string) =>
  helperName(podNames(prefix, pod).container, "candidate");

/** The build containers of a pod, also those of earlier deploys (by label). */
export async function buildBoxesOf(docker: DockerClient, prefix: string, pod: string): Promise<string[]> {
  const list = await docker.listContainers({
    all: true,
    filters: {
      label: [`${LABEL_PREFIX}=${prefix}`, `${LABEL_GIT_POD}=${pod}`, `${LABEL_HELPER}=${HELPER_BUILD}`],
    },
  });
  return list.map((c) => c.Id);
}

/**
 * Remove a container by name and wait until the name is free: a removal already under way (a
 * candidate removed a moment after its deploy) answers 409, and the name is taken until it ends.
 */
export async function removeAndWait(docker: DockerClient, name: string): Promise<void> {
  try {
    await removeContainer(docker, name);
    return;
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  for (let i = 0; i < 200; i++) {
    if (!(await inspectContainer(docker, name))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new AgentError("unavailable", `container ${name} is still being removed`);
}

/**
 * A deploy's build limits: the pod's own memory (its plan's, as its container has it: a resize
 * changes both), never more, so a build cannot make a small pod a large one for its length; CPU and
 * pids from the agent's config (a build may burst on idle CPU at its low weight, `BUILD_CPU_SHARES`).
 * The time limit is the agent's, or less: what the Worker says is left of the pod's daily build
 * budget (docs/git.md "Build budget").
 */
export function buildLimitsFor(
  config: GitConfig["build"],
  podMemoryBytes: number | undefined,
  budgetMs?: number,
): GitConfig["build"] {
  return {
    ...config,
    memoryBytes: podMemoryBytes && podMemoryBytes > 0 ? podMemoryBytes : config.memoryBytes,
    timeoutMs: budgetMs === undefined ? config.timeoutMs : Math.min(config.timeoutMs, budgetMs),
  };
}

/**
 * `runningPod`: the id of the pod's container when it runs. The build container then joins its
 * network namespace (`container:<id>`) instead of getting one of its own on the pod's network: the
 * engine makes no namespace, veth or address for it, which takes its start from ~300 ms to ~100 ms
 * here (the start is on every deploy's path). It reaches what the pod reaches, through the pod's
 * own interface (the same egress rules), and has no capability to change that namespace
 * (CapDrop ALL). What it could do that it could not before, bind a port beside the pod's app or
 * reach a server the app keeps on 127.0.0.1, is the same tenant's code meeting its own pod. A
 * stopped pod has no namespace to join: the build container gets its own on the pod's network.
 */
export function buildContainerOptions(
  prefix: string,
  pod: string,
  deployment: string,
  image: string,
  limits: GitConfig["build"],
  runningPod: string | null = null,
): ContainerCreateOptions {
  const n = podNames(prefix, pod);
  const network = runningPod ? { NetworkMode: `container:${runningPod}` } : { NetworkMode: n.network };
  return {
    name: buildName(prefix, pod, deployment),
    Image: image,
    User: "1000:1000",
    WorkingDir: HOME,
    Cmd: ["/bin/sleep", "infinity"],
    // npm's audit and update checks would wait on a registry the pod may not reach, at every install
    Env: [
      `HOME=${HOME}`,
      "NPM_CONFIG_AUDIT=false",
      "NPM_CONFIG_FUND=false",
      "NPM_CONFIG_UPDATE_NOTIFIER=false",
    ],
    Labels: { [LABEL_PREFIX]: prefix, [LABEL_HELPER]: HELPER_BUILD, [LABEL_GIT_POD]: pod },
    HostConfig: {
      ...POD_ISOLATION,
      Tmpfs: { "/tmp": "rw,nosuid,nodev,mode=1777,size=536870912" },
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      NanoCpus: limits.nanoCpus,
      // A quarter of a pod's CPU weight (the engine's default, 1024): up to its cap on an idle host
      // (a build is a burst; an install is as fast as by hand), and the pods first on a busy one.
      CpuShares: BUILD_CPU_SHARES,
      PidsLimit: limits.pids,
      OomScoreAdj: 800,
      Mounts: [{ Type: "volume", Source: n.volume, Target: HOME, ReadOnly: false }],
      ...network,
      LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
    },
    ...(runningPod ? {} : { NetworkingConfig: { EndpointsConfig: { [n.network]: {} } } }),
  };
}

export interface BuildBox {
  name: string;
  /** the container's id: a removal later never hits the next deploy's container of the same name */
  id: string;
  /** whether the deploy's wall clock ran out (the container was then killed) */
  readonly timedOut: boolean;
  /** start it again after its timeout killed it (only for the clean-up of what the deploy made) */
  revive(): Promise<void>;
  /** keep it at least `ms` longer (a process in it still serves requests in flight) */
  holdFor(ms: number): void;
  /** remove it (once a hold is over) */
  remove(): Promise<void>;
}

/**
 * Create and start the build container. The pod's earlier build containers (the last deploy's, held
 * for its candidate's requests in flight, or a leftover) are removed while it starts, not before it
 * is made: that removal took ~0.1 s of a code-only deploy's path. They are gone when the box is
 * returned, as a candidate of theirs would hold the standby port (in the pod's network namespace)
 * that the new release's candidate needs.
 */
export async function startBuildBox(
  docker: DockerClient,
  opts: ContainerCreateOptions,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<BuildBox> {
  const name = opts.name ?? "";
  // a leftover of this same deployment (a retry after the agent stopped)
  await removeAndWait(docker, name);
  const container = await docker.createContainer(opts);
  const earlier = buildBoxesOf(
    docker,
    opts.Labels?.[LABEL_PREFIX] ?? "",
    opts.Labels?.[LABEL_GIT_POD] ?? "",
  ).then((ids) =>
    Promise.all(ids.filter((id) => id !== container.id).map((id) => removeAndWait(docker, id))),
  );
  earlier.catch(() => undefined);
  let timedOut = false;
  const kill = () => void container.kill().catch(() => undefined);
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, timeoutMs);
  signal?.addEventListener("abort", kill, { once: true });
  let heldUntil = 0;
  const remove = async () => {
    const hold = heldUntil - Date.now();
    if (hold > 0) await new Promise((r) => setTimeout(r, hold));
    clearTimeout(timer);
    signal?.removeEventListener("abort", kill);
    await removeContainer(docker, container.id);
  };
  try {
    await container.start();
    await earlier;
  } catch (err) {
    await remove();
    throw err;
  }
  return {
    name,
    id: container.id,
    get timedOut() {
      return timedOut;
    },
    remove,
    holdFor: (ms) => {
      heldUntil = Math.max(heldUntil, Date.now() + ms);
    },
    revive: async () => {
      // the kill is asynchronous: wait until the container is down, then start it once more
      for (let i = 0; i < 100 && (await inspectContainer(docker, name))?.State.Running; i++)
        await new Promise((r) => setTimeout(r, 50));
      await startContainer(docker, name);
    },
  };
}
