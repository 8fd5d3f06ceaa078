import type { Readable } from "node:stream";
import type { ContainerInfo, ContainerInspectInfo } from "dockerode";
import type { PodState } from "../../shared/protocol";
import { diskBytes, podDiskOf } from "../disk/pod-disk";
import { countedArchive } from "../docker/counted-archive";
import { HOME, LABEL_POD, podNames, prefixFilter } from "../docker/naming";
import {
  inspectContainer,
  podStateOf,
  removeContainer,
  removeNetwork,
  removeVolume,
  startContainer,
  stopContainer,
  waitRunning,
} from "../docker/resources";
import { AgentError } from "../errors";
import { buildBoxesOf, candidateName, removeAndWait } from "../git/build";
import { PodRecord } from "../git/record";
import { LogHistory, policyOf } from "../inside/history";
import { podCreation } from "../pods/create";
import { routeTo } from "../pods/route";
import { applyMemory, removeAllServices, syncSidecars } from "../services/sidecars";
import { backupHandlers } from "./backups";
import { codingAgentHandlers } from "./coding-agents";
import type { HandlerDeps } from "./deps";
import { domainHandlers } from "./domains";
import { feedbackHandlers } from "./feedback";
import { fileHandlers } from "./files";
import { gitHandlers } from "./git";
import { guard } from "./guard";
import { healthHandlers } from "./health";
import { insideHandlers } from "./inside";
import { KeyedLock } from "./keyed-lock";
import { moveHandlers } from "./moves";
import { reconcileHandlers } from "./reconcile";
import { serviceHandlers } from "./services";
import { sshHandlers } from "./ssh";
import { terminalHandlers } from "./terminal";
import type { HandlerContext, HandlerTable } from "./types";
import { zipHandlers } from "./zip";

export type { HandlerDeps } from "./deps";

/**
 * The host side of every op in shared/protocol/ops.ts. Each op is idempotent where it can be: create
 * adopts its own same-named container, start/stop of a pod already in that state succeed, delete of
 * an absent pod succeeds. Commands on one pod run one at a time.
 */
export function createHandlers(deps: HandlerDeps): HandlerTable {
  const { config, docker, ingress } = deps;
  const prefix = config.namePrefix;
  const locks = deps.locks ?? new KeyedLock();
  const names = (pod: string) => podNames(prefix, pod);
  const disk = podDiskOf(config.podDiskRoot);

  const { createPod, validateSpec, blobStore } = podCreation(deps);
  // the plan's log retention and budget, kept beside the pod's log history (docs/logs.md)
  const logHistory = new LogHistory(docker, prefix, config.stateDir, locks, deps.log);

  const stateOf = async (pod: string): Promise<PodState> =>
    podStateOf(pod, await inspectContainer(docker, names(pod).container), names(pod).network);

  const mustExist = async (pod: string): Promise<ContainerInspectInfo> => {
    const info = await inspectContainer(docker, names(pod).container);
    if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
    return info;
  };

  const startPod = async (pod: string, ctx: HandlerContext): Promise<PodState> => {
    await mustExist(pod);
    await startContainer(docker, names(pod).container);
    const { info, ip } = await waitRunning(docker, names(pod).container, names(pod).network, ctx.signal);
    await syncSidecars(deps, pod); // the database services start with it (docs/services.md)
    await routeTo(deps, pod, info, ip, ctx.signal);
    return { name: pod, state: "running", ip };
  };

  return {
    "host.ping": async () => ({ pong: true }),

    "host.inventory": guard("host.inventory", async () => ({
      pods: inventoryOf(await docker.listContainers({ all: true, filters: prefixFilter(prefix) }), prefix),
    })),

    "pod.create": guard("pod.create", async (spec, ctx) => {
      validateSpec(spec);
      return locks.run(spec.name, async () => {
        const state = await createPod(spec, ctx, { seed: spec.seed, home: spec.home });
        // a pod moved from another host: the releases in its home are known again (rollback)
        if (spec.home?.releases) await new PodRecord(config, spec.name).importReleases(spec.home.releases);
        await logHistory.setPolicy(spec.name, policyOf(spec.limits));
        await deps.ssh?.open(spec.name, spec.sshPort);
        return state;
      });
    }),

    "pod.clone": guard("pod.clone", async ({ source, spec }, ctx) => {
      validateSpec(spec);
      if (source === spec.name) throw new AgentError("bad_request", "a pod cannot be cloned onto itself");
      return locks.run(spec.name, async () => {
        const existing = await inspectContainer(docker, names(spec.name).container);
        // A retry of a clone that already got past its first start has nothing left to copy.
        if (!existing || existing.State.Status === "created") {
          if (!(await inspectContainer(docker, names(source).container))) {
            throw new AgentError("not_found", `source pod ${source} has no container on this host`);
          }
        }
        const state = await createPod(spec, ctx, { clone: source });
        await logHistory.setPolicy(spec.name, policyOf(spec.limits));
        await deps.ssh?.open(spec.name, spec.sshPort);
        return state;
      });
    }),

    "pod.clone.export": guard("pod.clone.export", async ({ name, blobKey }, ctx) => {
      await mustExist(name);
      // an evacuation sends what changed after this moment once the pod is stopped (./moves.ts)
      const startedAt = Date.now();
      // Docker reads the volume whether the pod runs or not; the tar streams as it is read.
      const archive = countedArchive(
        (await docker.getContainer(names(name).container).getArchive({ path: HOME })) as Readable,
      );
      await blobStore().upload(blobKey, archive.stream, undefined, ctx.signal);
      return {
        bytes: archive.bytes(),
        releases: await new PodRecord(config, name).exportReleases(),
        startedAt,
      };
    }),

    // a stopped pod being backed up or restored in helper containers: 409 at once (keyed-lock.ts)
    "pod.start": guard("pod.start", ({ name }, ctx) => locks.runOrRefuse(name, () => startPod(name, ctx))),

    "pod.stop": guard("pod.stop", ({ name }) =>
      locks.run(name, async () => {
        await mustExist(name);
        await stopContainer(docker, names(name).container);
        await syncSidecars(deps, name); // its database services stop with it
        return stateOf(name);
      }),
    ),

    "pod.restart": guard("pod.restart", ({ name }, ctx) =>
      locks.runOrRefuse(name, async () => {
        await mustExist(name);
        await docker.getContainer(names(name).container).restart({ t: 10 });
        const { info, ip } = await waitRunning(
          docker,
          names(name).container,
          names(name).network,
          ctx.signal,
        );
        // a sidecar shares the pod container's network namespace, which the restart replaced
        await syncSidecars(deps, name);
        await routeTo(deps, name, info, ip, ctx.signal);
        return { name, state: "running", ip };
      }),
    ),

    "pod.inspect": guard("pod.inspect", ({ name }) => stateOf(name)),

    "pod.delete": guard("pod.delete", ({ name }) =>
      locks.run(name, async () => {
        const n = names(name);
        await deps.ssh?.close(name);
        // a deploy's build and candidate containers mount the home volume too
        for (const box of await buildBoxesOf(docker, prefix, name)) await removeAndWait(docker, box);
        await removeAndWait(docker, candidateName(prefix, name));
        // database sidecars and their data (subvolumes in the home's qgroup: before the home)
        await removeAllServices(deps, name);
        await removeContainer(docker, n.container);
        await ingress.remove(name);
        await ingress.setCustomDomains(name, []);
        await ingress.setFeedback(name, null);
        await removeVolume(docker, n.volume);
        await disk?.remove(n.volume);
        await removeNetwork(docker, n.network);
        await new PodRecord(config, name).remove();
        await logHistory.remove(name);
        return { deleted: true as const };
      }),
    ),

    "pod.resize": guard("pod.resize", ({ name, limits }) =>
      locks.run(name, async () => {
        await mustExist(name);
        // A home made before limits existed (a plain engine volume) stays unlimited until recreated.
        const volume = names(name).volume;
        if (disk && (await disk.exists(volume))) await disk.setLimit(volume, diskBytes(limits));
        // the app's memory is the plan's less its database services' shares (docs/services.md)
        await applyMemory(deps, name, limits);
        await logHistory.setPolicy(name, policyOf(limits));
        return stateOf(name);
      }),
    ),

    ...sshHandlers(deps, locks),
    ...terminalHandlers(deps),
    ...insideHandlers(deps, locks),
    ...fileHandlers(deps),
    ...healthHandlers(deps, locks),
    ...zipHandlers(deps, locks),
    ...gitHandlers(deps, locks),
    ...serviceHandlers(deps, locks),
    ...codingAgentHandlers(deps, locks),
    ...backupHandlers(deps, locks),
    ...domainHandlers(deps, locks),
    ...feedbackHandlers(deps, locks),
    ...moveHandlers(deps, locks),
    ...reconcileHandlers(deps, locks),
  };
}

/** The host's pods for the control plane, from a list of this prefix's containers (all of them). */
export function inventoryOf(list: readonly ContainerInfo[], prefix: string): PodState[] {
  const pods = list.flatMap((c): PodState[] => {
    const pod = c.Labels[LABEL_POD];
    if (!pod) return [];
    const running = c.State === "running";
    const ip = c.NetworkSettings?.Networks?.[podNames(prefix, pod).network]?.IPAddress || null;
    return [{ name: pod, state: running ? "running" : "stopped", ip: running ? ip : null }];
  });
  // Code-unit order, which is the same as a locale's for pod names ([a-z0-9-]): the first
  // localeCompare of a process loads ICU's collation data, ~3 MB of RSS for the agent's life.
  return pods.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
