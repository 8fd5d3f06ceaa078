import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { OpResult } from "../../shared/protocol";
import type { DriftFinding, DriftKind, ReconcilePod } from "../../shared/protocol/reconcile";
import { podDiskOf } from "../disk/pod-disk";
import { podNames, prefixFilter } from "../docker/naming";
import { removeContainer, removeNetwork } from "../docker/resources";
import { PodRecord } from "../git/record";
import type { HandlerDeps } from "../handlers/deps";
import type { KeyedLock } from "../handlers/keyed-lock";
import { Owners } from "./owners";

/** a helper that names no pod (a backup's test-restore box) outlives no backup: the backup deadline */
export const PODLESS_HELPER_MAX_AGE_MS = 6 * 60 * 60_000;
/** a pod name as a vhost or git record file is named (ops.ts's PodName) */
const POD_NAME = /^[a-z][a-z0-9-]{1,38}[a-z0-9]$/;

export interface ReconcileInput {
  pods: ReconcilePod[];
  graceMs: number;
  dryRun: boolean;
}

type Removal = () => Promise<void>;

/**
 * One pass over what the agent holds under its prefix (docs/reliability.md "Drift"): every object
 * is matched to a live pod (./owners.ts); what no pod owns is removed when it is older than the
 * grace period and holds no data (containers, networks, vhosts, git records), and only reported when
 * it does (volumes, subvolumes). A removal for a pod runs under the pod's lock, and not at all while
 * a command works on that pod (the object is then left for the next pass). Objects are listed by
 * the prefix's label, and names must start with `<prefix>-` too: nothing of another prefix or
 * outside the agent is ever touched.
 */
export async function reconcile(
  deps: Pick<HandlerDeps, "config" | "docker" | "ingress" | "log">,
  locks: KeyedLock,
  input: ReconcileInput,
): Promise<OpResult<"host.reconcile">> {
  const { config, docker, ingress } = deps;
  const prefix = config.namePrefix;
  const ours = (name: string) => name.startsWith(`${prefix}-`);
  const owners = new Owners(prefix, input.pods);
  const now = Date.now();
  const findings: DriftFinding[] = [];

  /** decide one orphan: left when young, reported when it holds data, else removed (or would be) */
  const orphan = async (
    o: { kind: DriftKind; name: string; pod: string | null; createdMs: number; detail: string },
    remove: Removal | null,
    minAgeMs = input.graceMs,
  ) => {
    const base = { kind: o.kind, name: o.name, pod: o.pod };
    const age = now - o.createdMs;
    if (!(age >= minAgeMs)) {
      findings.push({ ...base, action: "young", detail: `${o.detail}; younger than ${minutes(minAgeMs)}` });
      return;
    }
    if (!remove) {
      findings.push({ ...base, action: "reported", detail: `${o.detail}; holds data: left for an operator` });
      return;
    }
    if (input.dryRun) {
      findings.push({ ...base, action: "would_remove", detail: o.detail });
      return;
    }
    const work = async () => {
      await remove();
      return true;
    };
    // a command on the pod (its create, delete or deploy) goes first: this object waits a pass
    const ran = o.pod === null ? work() : locks.tryRun(o.pod, work);
    if (ran === null) {
      findings.push({ ...base, action: "young", detail: `${o.detail}; a command is working on the pod` });
      return;
    }
    try {
      await ran;
      findings.push({ ...base, action: "removed", detail: o.detail });
      deps.log.warn("reconcile: removed an orphan", { kind: o.kind, name: o.name, pod: o.pod });
    } catch (error) {
      findings.push({
        ...base,
        action: "failed",
        detail: `${o.detail}; removing it failed: ${String(error)}`,
      });
    }
  };

  const filters = prefixFilter(prefix);
  const [containers, networks, volumes] = await Promise.all([
    docker.listContainers({ all: true, filters }),
    docker.listNetworks({ filters }),
    docker.listVolumes({ filters }),
  ]);

  // Containers first: a network or vhost is freed once the container that used it is gone.
  const present = new Set<string>();
  for (const c of containers) {
    const name = (c.Names[0] ?? "").replace(/^\//, "");
    if (!ours(name)) continue;
    present.add(name);
    const owned = owners.container(name, c.Labels ?? {});
    if (owned.owned === true) continue;
    const detail =
      owned.pod === null
        ? `${owned.kind} of no pod`
        : `${owned.kind} of pod ${owned.pod}, which has no record on this host`;
    await orphan(
      { ...owned, name, createdMs: c.Created * 1000, detail },
      () => removeContainer(docker, c.Id),
      owned.owned === null ? Math.max(input.graceMs, PODLESS_HELPER_MAX_AGE_MS) : input.graceMs,
    );
  }

  for (const n of networks) {
    if (!ours(n.Name)) continue;
    const owned = owners.network(n.Name, n.Labels ?? {});
    if (owned.owned) continue;
    await orphan(
      { ...owned, name: n.Name, createdMs: Date.parse(n.Created), detail: recordless(owned.kind, owned.pod) },
      () => removeNetwork(docker, n.Id),
    );
  }

  const volumeNames = new Set<string>();
  for (const v of volumes.Volumes ?? []) {
    volumeNames.add(v.Name);
    if (!ours(v.Name)) continue;
    const owned = owners.volume(v.Name, v.Labels ?? {});
    if (owned.owned) continue;
    const created = (v as { CreatedAt?: string }).CreatedAt;
    await orphan(
      {
        ...owned,
        name: v.Name,
        createdMs: created ? Date.parse(created) : 0,
        detail: recordless(owned.kind, owned.pod),
      },
      null,
    );
  }

  const disk = podDiskOf(config.podDiskRoot);
  if (disk) {
    const expected = owners.expectedSubvolumes();
    for (const entry of await listDir(disk.root)) {
      // an engine volume of this name (of any prefix) is the volume's: judged above, or not ours
      if (!ours(entry) || expected.has(entry) || volumeNames.has(entry)) continue;
      const path = disk.dirOf(entry);
      await orphan(
        {
          kind: "subvolume",
          name: path,
          pod: null,
          createdMs: await mtimeMs(path),
          detail: "subvolume of no volume",
        },
        null,
      );
    }
  }

  for (const file of await listDir(join(ingress.dir, "vhosts"))) {
    const pod = file.endsWith(".conf") ? file.slice(0, -".conf".length) : "";
    if (!POD_NAME.test(pod) || owners.pod(pod)) continue;
    const path = join(ingress.dir, "vhosts", file);
    await orphan(
      { kind: "vhost", name: path, pod, createdMs: await mtimeMs(path), detail: recordless("vhost", pod) },
      async () => {
        await ingress.remove(pod);
        await ingress.setCustomDomains(pod, []);
        await ingress.setFeedback(pod, null);
      },
    );
  }

  for (const pod of await listDir(join(config.stateDir, "git"))) {
    if (!POD_NAME.test(pod) || owners.pod(pod)) continue;
    const path = join(config.stateDir, "git", pod);
    await orphan(
      {
        kind: "release",
        name: path,
        pod,
        createdMs: await mtimeMs(path),
        detail: recordless("git record", pod),
      },
      () => new PodRecord(config, pod).remove(),
    );
  }

  const missing = input.pods
    .map((p) => p.name)
    .filter((pod) => !present.has(podNames(prefix, pod).container));
  return { findings, missing };
}

const recordless = (what: string, pod: string | null) =>
  pod === null ? `${what} of no pod` : `${what} of pod ${pod}, which has no record on this host`;

const minutes = (ms: number) =>
  ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/** when the entry last changed (lstat: a link is judged as itself); gone meanwhile: now (young) */
async function mtimeMs(path: string): Promise<number> {
  return lstat(path).then(
    (s) => s.mtimeMs,
    () => Date.now(),
  );
}
