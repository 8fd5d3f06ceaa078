import type { Readable } from "node:stream";
import type { HomeSeed, PodSpec, PodState } from "../../shared/protocol";
import type { ZipSeed } from "../../shared/protocol/zip";
import { diskBytes, podDiskOf } from "../disk/pod-disk";
import { isConflict, isNotFound } from "../docker/client";
import { cloneHelperOptions, containerCreateOptions } from "../docker/container-spec";
import { writeFreshHome } from "../docker/fresh-home";
import { HOME, podLabels, podNames } from "../docker/naming";
import { forgetFailedNeighbour } from "../docker/neighbour";
import {
  assertOwned,
  ensureNetwork,
  ensureVolume,
  firstContainerAddress,
  inspectContainer,
  removeContainer,
  removeNetwork,
  removeVolume,
  startContainer,
  waitRunning,
} from "../docker/resources";
import { specFileEntries } from "../docker/spec-files";
import { buildTar } from "../docker/tar";
import { AgentError } from "../errors";
import { type HandlerDeps, podStreams } from "../handlers/deps";
import type { HandlerContext } from "../handlers/types";
import { validDomain } from "../ingress/vhost";
import { type ReloadOutcome, reloadApp } from "../inside/reload";
import { preloadStaged, type StagedArchive, stageArchive, type Unpacked, unpackStaged } from "../zip/deploy";
import { routeTo } from "./route";

/**
 * Making a pod on this host (`pod.create`, `pod.clone`, a from-zip or cross-host create): its
 * network, home volume (a btrfs subvolume with the plan's limit) and container, the spec's files,
 * the start and the route. Idempotent: a retry adopts what an earlier try made; a failure removes
 * what this call made and nothing else.
 */
export function podCreation(deps: HandlerDeps) {
  const { config, docker, ingress } = deps;
  const prefix = config.namePrefix;
  const streams = podStreams(deps);
  const names = (pod: string) => podNames(prefix, pod);
  const disk = podDiskOf(config.podDiskRoot);

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
    // A from-zip archive is fetched from the control plane and checked while the pod is made (it
    // goes in before the start, or once the pod runs: below). Never rejects: the error is its value.
    const staging: Promise<StagedArchive | Error> | null = from.seed
      ? stageArchive(deps, from.seed.blobKey, ctx.signal).catch((err: unknown) =>
          err instanceof Error ? err : new Error(String(err)),
        )
      : null;
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
          info = await inspectContainer(docker, n.container);
          if (!info) throw err;
          assertOwned("container", n.container, info.Config.Labels, spec.podId);
        }
      }
      // Files go in only before the first start: a running pod adopted by a retry already has them,
      // and its user may have changed them since.
      let preloaded: (Unpacked & { env: boolean }) | null = null;
      if (fresh) {
        let entries = specFileEntries(spec, { onlyNonEmpty: copied });
        // A home this call made and the engine just seeded from the image: written on the host.
        const direct = disk && made.volume && made.container && !copied ? disk.dirOf(n.volume) : null;
        // A from-zip archive goes into such a home before the first start (its fetch ran beside
        // the calls above): the pod starts on it, with no unpack in the pod after the start.
        if (direct && staging) {
          const staged = await staging;
          if (staged instanceof Error) throw staged;
          preloaded = await preloadStaged(docker.getContainer(n.container), direct, staged);
          if (preloaded.env) entries = entries.filter((e) => e.path !== "app/.env");
        }
        if (direct) await writeFreshHome(direct, entries);
        else if (entries.length > 0)
          await docker.getContainer(n.container).putArchive(buildTar(entries), { path: HOME });
      }
      made.vhost = !(await ingress.hasVhost(spec.name));
      await needNetwork();
      // The vhost is rendered while the container starts (a reload takes as long as a preset's
      // boot, the start far longer): on the network this call made, the container's address is
      // known before it has it. The start confirms it; another address is routed again below. Not
      // for a from-zip pod, whose vhost waits for its archive (below) unless the archive is in
      // already and needs no reload.
      const reloadPreloaded =
        preloaded !== null && !(spec.preset === "static" && preloaded.manifests.length === 0);
      const early =
        made.network && (!from.seed || (preloaded && !reloadPreloaded))
          ? await firstContainerAddress(docker, n.network)
          : null;
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
      // A from-zip archive not put in before the start (a home this call cannot write: an adopted
      // container, a host without pod disks) replaces the default app once the pod runs. Either
      // way it is reloaded when it asks for one (its dependencies installed, its services
      // restarted on it) before its vhost exists, so "running" already serves the archive: no
      // request meets the default app or a restarting server. A
      // failed unpack fails the creation; a failed install is the app's problem, told in the
      // result. A retry unpacks again: an agent restarted mid-unpack must not leave the default app
      // behind, and the same archive twice gives the same ~/app.
      let reload: ReloadOutcome | undefined;
      if (preloaded) {
        reload = reloadPreloaded
          ? await reloadApp(docker, prefix, spec.name, spec.preset, ctx.log)
          : { ok: true, services: [], depsInstalled: null, unsupported: [] };
      } else if (staging) {
        const staged = await staging;
        if (staged instanceof Error) throw staged;
        const unpacked = await unpackStaged({ exec: streams, prefix }, spec.name, staged, ctx.signal);
        // A static pod's nginx serves the new ~/app as it is: a reload there only installs and
        // builds what a manifest asks for (an import's React project), so without one it is skipped.
        reload =
          spec.preset === "static" && unpacked.manifests.length === 0
            ? { ok: true, services: [], depsInstalled: null, unsupported: [] }
            : await reloadApp(docker, prefix, spec.name, spec.preset, ctx.log);
      }
      await routeTo(deps, spec.name, running.info, running.ip, ctx.signal); // a no-op render when early was right
      return { name: spec.name, state: "running", ip: running.ip, ...(reload ? { reload } : {}) };
    } catch (err) {
      await networkReady; // so the undo knows whether this call made the network
      await undo(spec, made, ctx);
      throw err;
    } finally {
      const staged = await staging;
      if (staged && !(staged instanceof Error)) await staged.dispose();
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
      const body = (await source()) as Readable;
      // closed whatever the put's outcome: the engine holds the lock of a container whose archive
      // is open (a same-host clone's source), ../docker/counted-archive.ts
      await container.putArchive(body, { path: "/home" }).finally(() => body.destroy());
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

  return { createPod, validateSpec, blobStore };
}
