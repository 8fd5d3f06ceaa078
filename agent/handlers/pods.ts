import { type Readable, Transform } from "node:stream";
import type { ContainerInfo, ContainerInspectInfo } from "dockerode";
import type { HomeSeed, PodSpec, PodState } from "../../shared/protocol";
import type { ZipSeed } from "../../shared/protocol/zip";
import { diskBytes, podDiskOf } from "../disk/pod-disk";
import { isConflict, isNotFound } from "../docker/client";
import { cloneHelperOptions, containerCreateOptions } from "../docker/container-spec";
import { writeFreshHome } from "../docker/fresh-home";
import {
  HOME,
  LABEL_DOMAIN,
  LABEL_POD,
  LABEL_POD_ID,
  LABEL_PORT,
  podLabels,
  podNames,
  prefixFilter,
} from "../docker/naming";
import { forgetFailedNeighbour } from "../docker/neighbour";
import {
  assertOwned,
  ensureNetwork,
  ensureVolume,
  firstContainerAddress,
  inspectContainer,
  podStateOf,
  removeContainer,
  removeNetwork,
  removeVolume,
  startContainer,
  stopContainer,
  waitRunning,
} from "../docker/resources";
import { specFileEntries } from "../docker/spec-files";
import { buildTar } from "../docker/tar";
import { waitForPort } from "../docker/wait-port";
import { AgentError } from "../errors";
import { buildName, candidateName, removeAndWait } from "../git/build";
import { PodRecord } from "../git/record";
import { validDomain } from "../ingress/vhost";
import { type ReloadOutcome, reloadApp } from "../inside/reload";
import { applyMemory, removeAllServices, syncSidecars } from "../services/sidecars";
import { deployArchive } from "../zip/deploy";
import { backupHandlers } from "./backups";
import { codingAgentHandlers } from "./coding-agents";
import { type HandlerDeps, podStreams } from "./deps";
import { domainHandlers } from "./domains";
import { feedbackHandlers } from "./feedback";
import { fileHandlers } from "./files";
import { gitHandlers } from "./git";
import { guard } from "./guard";
import { healthHandlers } from "./health";
import { insideHandlers } from "./inside";
import { KeyedLock } from "./keyed-lock";
import { serviceHandlers } from "./services";
import { sshHandlers } from "./ssh";
import type { HandlerContext, HandlerTable } from "./types";
import { zipHandlers } from "./zip";

export type { HandlerDeps } from "./deps";

/** how long a start waits for the pod's web server before reporting running anyway */
const WEB_READY_TIMEOUT_MS = 15_000;

/**
 * The host side of every op in shared/protocol/ops.ts. Each op is idempotent where it can be: create
 * adopts its own same-named container, start/stop of a pod already in that state succeed, delete of
 * an absent pod succeeds. Commands on one pod run one at a time.
 */
export function createHandlers(deps: HandlerDeps): HandlerTable {
  const { config, docker, ingress } = deps;
  const prefix = config.namePrefix;
  const streams = podStreams(deps);
  const locks = deps.locks ?? new KeyedLock();
  const names = (pod: string) => podNames(prefix, pod);
  const disk = podDiskOf(config.podDiskRoot);

  const stateOf = async (pod: string): Promise<PodState> =>
    podStateOf(pod, await inspectContainer(docker, names(pod).container), names(pod).network);

  const mustExist = async (pod: string): Promise<ContainerInspectInfo> => {
    const info = await inspectContainer(docker, names(pod).container);
    if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
    return info;
  };

  /** Point the pod's vhost at its current address (domain and port are labels of the container). */
  const routeTo = async (pod: string, info: ContainerInspectInfo, ip: string, signal?: AbortSignal) => {
    const labels = info.Config.Labels ?? {};
    const domain = labels[LABEL_DOMAIN];
    const port = Number(labels[LABEL_PORT]);
    const podId = labels[LABEL_POD_ID];
    if (!domain || !port || !podId) {
      deps.log.warn("container lacks ingress labels; vhost not rendered", { pod });
      return;
    }
    // "running" should mean the page answers: wait (bounded) for the pod's web server to listen,
    // while the ingress takes the route (the two are independent; a reload takes longer than a
    // preset's boot).
    const [, listening] = await Promise.all([
      ingress.upsert({ pod, podId, domains: [domain], ip, port }),
      waitForPort(ip, port, WEB_READY_TIMEOUT_MS, signal),
    ]);
    if (!listening) {
      deps.log.warn("pod is running but nothing listens on its web port yet", { pod, port });
    }
  };

  const blobStore = () => {
    if (!deps.blobs) throw new AgentError("unavailable", "this agent has no connection to stage blobs");
    return deps.blobs;
  };

  const ensureImage = async (image: string) => {
    try {
      await docker.getImage(image).inspect();
    } catch (err) {
      if (isNotFound(err)) throw new AgentError("unavailable", `image ${image} not present on this host`);
      throw err;
    }
  };

  const validateSpec = (spec: PodSpec) => {
    if (!validDomain(spec.domain))
      throw new AgentError("bad_request", `invalid domain ${JSON.stringify(spec.domain)}`);
    if (spec.port < 1 || spec.port > 65535) throw new AgentError("bad_request", `invalid port ${spec.port}`);
    specFileEntries(spec); // throws bad_request on names and values the pod's files cannot hold
  };

  /**
   * Create (or adopt) network, volume and container, write the spec's files into the home volume
   * before the first start, start, wait for an address, render the vhost. On failure everything this
   * call created is removed again; what existed before (an adopted pod) is left alone.
   */
  const createPod = async (
    spec: PodSpec,
    ctx: HandlerContext,
    from: { clone?: string; seed?: ZipSeed; home?: HomeSeed } = {},
  ): Promise<PodState & { reload?: ReloadOutcome }> => {
    const cloneFrom = from.clone;
    const copied = Boolean(cloneFrom || from.home);
    const image = config.images[spec.preset];
    const n = names(spec.name);
    const labels = podLabels(prefix, spec.name, spec.podId);
    const made = { network: false, volume: false, container: false, vhost: false };
    // The network is the slowest engine call of a create (~90 ms: a bridge, its addresses, its
    // filter rules), and the container does not need it until it starts: the engine takes a
    // container whose network does not exist yet. So the container is made and its home written
    // meanwhile. An engine that checks the network at create (a newer one may) is answered by
    // waiting for it and creating again. Never rejects: the error is its value.
    const networkReady = ensureNetwork(docker, n.network, labels).then(
      (madeIt) => {
        made.network = madeIt;
        return null;
      },
      (err: unknown) => err ?? new Error("network create failed"),
    );
    const needNetwork = async () => {
      const err = await networkReady;
      if (err) throw err;
    };
    try {
      // Independent engine calls at once (each is a round trip, the volume's disk a few btrfs
      // calls): a create waits for the slowest of them, not for their sum.
      const [imageCheck, existing, volume] = await Promise.allSettled([
        ensureImage(image),
        inspectContainer(docker, n.container),
        ensureVolume(
          docker,
          n.volume,
          labels,
          disk ? () => disk.create(n.volume, diskBytes(spec.limits)) : undefined,
        ),
      ]);
      made.volume = volume.status === "fulfilled" && volume.value;
      for (const r of [imageCheck, existing, volume]) if (r.status === "rejected") throw r.reason;
      let info = existing.status === "fulfilled" ? existing.value : null;
      if (info) assertOwned("container", n.container, info.Config.Labels, spec.podId);
      const fresh = !info || info.State.Status === "created";
      // A clone's home is filled before the pod container exists, so the engine does not seed the
      // volume from the image: the copy is exact (files deleted in the source stay deleted).
      if (fresh && cloneFrom) {
        const source = cloneFrom;
        await fillHome(spec, image, () =>
          docker.getContainer(names(source).container).getArchive({ path: HOME }),
        );
      }
      // A clone from another host: the source's home, staged by its `pod.clone.export`.
      const home = from.home;
      if (fresh && home) {
        await fillHome(spec, image, async () => (await blobStore().fetch(home.blobKey, ctx.signal)).body);
      }
      if (!info) {
        const create = () => docker.createContainer(containerCreateOptions(prefix, spec, image));
        try {
          await create().catch(async (err: unknown) => {
            if (!isNotFound(err)) throw err;
            await needNetwork();
            return create();
          });
          made.container = true;
        } catch (err) {
          if (!isConflict(err)) throw err; // a concurrent retry created it: adopt it
          info = await mustExist(spec.name);
          assertOwned("container", n.container, info.Config.Labels, spec.podId);
        }
      }
      // Files go in only before the first start: a running pod adopted by a retry already has them,
      // and its user may have changed them since.
      if (fresh) {
        const entries = specFileEntries(spec, { onlyNonEmpty: copied });
        // A home this call made and the engine just seeded from the image: written on the host.
        const direct = disk && made.volume && made.container && !copied ? disk.dirOf(n.volume) : null;
        if (direct) await writeFreshHome(direct, entries);
        else if (entries.length > 0)
          await docker.getContainer(n.container).putArchive(buildTar(entries), { path: HOME });
      }
      made.vhost = !(await ingress.hasVhost(spec.name));
      await needNetwork();
      // The vhost is rendered while the container starts (a reload takes as long as a preset's
      // boot, the start far longer): on the network this call made, the container's address is
      // known before it has it. The start confirms it; another address is routed again below. Not
      // for a from-zip pod, whose vhost waits for its archive (below).
      const early = made.network && !from.seed ? await firstContainerAddress(docker, n.network) : null;
      const earlyRoute = early
        ? ingress
            .upsert({ pod: spec.name, podId: spec.podId, domains: [spec.domain], ip: early, port: spec.port })
            .then(
              () => null,
              (e: unknown) => e,
            )
        : null;
      await startContainer(docker, n.container);
      const running = await waitRunning(docker, n.container, n.network, ctx.signal);
      const routeError = await earlyRoute;
      if (routeError) throw routeError;
      if (early) await forgetFailedNeighbour(running.ip);
      // A from-zip archive replaces the default app once the pod runs, and is reloaded (its
      // dependencies installed, its services restarted on it) before its vhost exists, so "running"
      // already serves the archive: no request meets the default app or a restarting server. A
      // failed unpack fails the creation; a failed install is the app's problem, told in the
      // result. A retry unpacks again: an agent restarted mid-unpack must not leave the default app
      // behind, and the same archive twice gives the same ~/app.
      let reload: ReloadOutcome | undefined;
      if (from.seed) {
        await deployArchive(
          { exec: streams, blobs: deps.blobs, prefix },
          spec.name,
          from.seed.blobKey,
          ctx.signal,
        );
        reload = await reloadApp(docker, prefix, spec.name, spec.preset, ctx.log);
      }
      await routeTo(spec.name, running.info, running.ip, ctx.signal); // a no-op render when early was right
      return { name: spec.name, state: "running", ip: running.ip, ...(reload ? { reload } : {}) };
    } catch (err) {
      await networkReady; // so the undo knows whether this call made the network
      await undo(spec, made, ctx);
      throw err;
    }
  };

  /**
   * Stream a home archive (a tar of /home/pod_user: another pod's here, or one staged from another
   * host) into the new pod's volume through a never-started helper.
   */
  const fillHome = async (spec: PodSpec, image: string, source: () => Promise<NodeJS.ReadableStream>) => {
    const helper = cloneHelperOptions(prefix, spec, image);
    const helperName = helper.name ?? "";
    await removeContainer(docker, helperName); // a leftover of an interrupted clone
    const container = await docker.createContainer(helper);
    try {
      await container.putArchive(await source(), { path: "/home" });
    } finally {
      await removeContainer(docker, helperName);
    }
  };

  const undo = async (
    spec: PodSpec,
    made: Record<"network" | "volume" | "container" | "vhost", boolean>,
    ctx: HandlerContext,
  ) => {
    const n = names(spec.name);
    const steps: [boolean, string, () => Promise<unknown>][] = [
      [made.container, "container", () => removeContainer(docker, n.container)],
      [made.vhost, "vhost", () => ingress.remove(spec.name)],
      [made.volume, "volume", () => removeVolume(docker, n.volume)],
      [made.volume, "home subvolume", async () => disk?.remove(n.volume)],
      [made.network, "network", () => removeNetwork(docker, n.network)],
    ];
    for (const [did, what, step] of steps) {
      if (!did) continue;
      await step().catch((e: unknown) =>
        ctx.log.error("cleanup after failed create left something behind", {
          pod: spec.name,
          what,
          error: String(e),
        }),
      );
    }
  };

  const startPod = async (pod: string, ctx: HandlerContext): Promise<PodState> => {
    await mustExist(pod);
    await startContainer(docker, names(pod).container);
    const { info, ip } = await waitRunning(docker, names(pod).container, names(pod).network, ctx.signal);
    await syncSidecars(deps, pod); // the database services start with it (docs/services.md)
    await routeTo(pod, info, ip, ctx.signal);
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
        await deps.ssh?.open(spec.name, spec.sshPort);
        return state;
      });
    }),

    "pod.clone.export": guard("pod.clone.export", async ({ name, blobKey }, ctx) => {
      await mustExist(name);
      // Docker reads the volume whether the pod runs or not; the tar streams as it is read.
      const archive = (await docker
        .getContainer(names(name).container)
        .getArchive({ path: HOME })) as Readable;
      let bytes = 0;
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done(null, chunk);
        },
      });
      archive.once("error", (error) => counted.destroy(error));
      await blobStore().upload(blobKey, archive.pipe(counted), undefined, ctx.signal);
      return { bytes };
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
        await routeTo(name, info, ip, ctx.signal);
        return { name, state: "running", ip };
      }),
    ),

    "pod.inspect": guard("pod.inspect", ({ name }) => stateOf(name)),

    "pod.delete": guard("pod.delete", ({ name }) =>
      locks.run(name, async () => {
        const n = names(name);
        await deps.ssh?.close(name);
        // a deploy's build and candidate containers mount the home volume too
        await removeAndWait(docker, buildName(prefix, name));
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
        await new PodRecord(config.stateDir, name).remove();
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
        return stateOf(name);
      }),
    ),

    ...sshHandlers(deps, locks),
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
