import type { ContainerCreateOptions, ContainerInspectInfo, HostConfig } from "dockerode";
import { type DockerClient, dockerStatus, isNotFound, isNotModified } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { POD_ISOLATION } from "../docker/isolation";
import {
  backupHelperName,
  HOME,
  LABEL_BACKUP_POD,
  LABEL_PREFIX,
  podNames,
  serviceNames,
} from "../docker/naming";
import { BASH, TIMEOUT } from "../docker/pod-bin";
import { LABEL_HELPER } from "../docker/pod-user";
import { containerLogTail, removeContainer } from "../docker/resources";
import { removeAndWait } from "../git/build";
import type { Logger } from "../logger";
import { SERVICE_DATA } from "../services/spec";
import { tail } from "./pod-run";
import { SERVICE_TIMEOUT_S, type ServiceKind } from "./services";

/**
 * The containers a backup or restore of a stopped pod runs in (docs/backups.md "A stopped pod").
 * Starting the pod itself would start the tenant's app, its cron and workers, and route traffic to
 * it; instead the job gets a helper made like the pod and given nothing the pod lacks:
 *
 * - the pod helper: the pod container's own image, uid 1000, every capability dropped, the pods'
 *   seccomp profile and no-new-privileges, a read-only root, the pod's tmpfs mounts, the pod's home
 *   volume and nothing else (no host path, no socket), network `none`, the pod container's
 *   memory, CPU and pids. It idles (`sleep`, bounded) while the job execs its usual scripts in it;
 * - a service helper per managed database: the sidecar's own image, limits, tmpfs mounts and data
 *   volume, the same isolation, network `none` (the server listens on the helper's own loopback;
 *   the job talks to it over its unix socket with svc-dump/svc-load as in a sidecar). Started for
 *   one dump or load, then stopped cleanly (the image's stop signal: a checkpoint, an RDB save) and
 *   removed, so the sidecar later starts on a consistent data directory.
 *
 * Two servers must never share a data directory: the job holds the pod's lock (a start is refused
 * meanwhile), a sidecar found running beside a stopped pod is stopped first, and a helper left by
 * an agent that died mid-job is removed at the agent's start and before its sidecar is started
 * (../services/sidecars.ts). Each helper also ends by itself after its lifetime.
 */

export const HELPER_BACKUP_POD = "backup-pod";
export const HELPER_BACKUP_SERVICE = "backup-service";

/**
 * The pod helper's lifetime: past every bound of one job summed (three service dumps or loads, the
 * SQLite pass, the archive) with room; the job removes it long before.
 */
const POD_HELPER_LIFETIME_S = 4 * 3600;
/** a service helper serves one dump or load */
const SERVICE_HELPER_LIFETIME_S = SERVICE_TIMEOUT_S + 600;
/** how long a service helper's server may take to accept connections (svc-init waits as long) */
const SERVICE_READY_S = 60;
/** a clean shutdown of a database server (the sidecars' own StopTimeout is 20 s) */
const SERVICE_STOP_S = 30;
const SVC_RUN = "/opt/podhost/bin/svc-run";
const SVC_READY = "/opt/podhost/bin/svc-ready";

const MB = 1024 * 1024;

/** the container's resource limits, copied (a limit the engine reports as 0 falls back to `floor`) */
const limitsOf = (info: ContainerInspectInfo, floor: { memory: number; pids: number }) => {
  const h = info.HostConfig;
  const memory = h.Memory && h.Memory > 0 ? h.Memory : floor.memory;
  return {
    Memory: memory,
    MemorySwap: memory,
    NanoCpus: h.NanoCpus && h.NanoCpus > 0 ? h.NanoCpus : 1e9,
    PidsLimit: h.PidsLimit && h.PidsLimit > 0 ? h.PidsLimit : floor.pids,
  };
};

const isolation: HostConfig = {
  ...POD_ISOLATION,
  NetworkMode: "none",
  OomScoreAdj: 500,
  RestartPolicy: { Name: "no" },
  AutoRemove: false,
  LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
};

/** The pod helper, from the stopped pod container's own inspect. */
export function podHelperOptions(
  prefix: string,
  pod: string,
  info: ContainerInspectInfo,
): ContainerCreateOptions {
  const n = podNames(prefix, pod);
  return {
    name: backupHelperName(n.container),
    Image: info.Image,
    User: "1000:1000",
    WorkingDir: HOME,
    Cmd: ["/bin/sleep", String(POD_HELPER_LIFETIME_S)],
    Labels: { [LABEL_PREFIX]: prefix, [LABEL_HELPER]: HELPER_BACKUP_POD, [LABEL_BACKUP_POD]: pod },
    NetworkDisabled: true,
    HostConfig: {
      ...isolation,
      Tmpfs: { "/tmp": `rw,nosuid,nodev,mode=1777,size=${64 * MB}`, ...info.HostConfig.Tmpfs },
      ...limitsOf(info, { memory: 256 * MB, pids: 128 }),
      Mounts: [{ Type: "volume", Source: n.volume, Target: HOME, ReadOnly: false }],
    },
  };
}

/** A service helper, from the (stopped) sidecar's own inspect. */
export function serviceHelperOptions(
  prefix: string,
  pod: string,
  kind: ServiceKind,
  sidecar: ContainerInspectInfo,
): ContainerCreateOptions {
  const n = serviceNames(prefix, pod, kind);
  return {
    name: backupHelperName(n.container),
    Image: sidecar.Image,
    User: "1000:1000",
    WorkingDir: "/",
    // the image's own server under a wall clock; the image's stop signal reaches the server
    Cmd: [TIMEOUT, String(SERVICE_HELPER_LIFETIME_S), SVC_RUN],
    Labels: { [LABEL_PREFIX]: prefix, [LABEL_HELPER]: HELPER_BACKUP_SERVICE, [LABEL_BACKUP_POD]: pod },
    NetworkDisabled: true,
    StopTimeout: SERVICE_STOP_S,
    HostConfig: {
      ...isolation,
      Tmpfs: { ...sidecar.HostConfig.Tmpfs },
      ...limitsOf(sidecar, { memory: 128 * MB, pids: 128 }),
      Mounts: [{ Type: "volume", Source: n.volume, Target: SERVICE_DATA, ReadOnly: false }],
    },
  };
}

export interface Helper {
  /** the container's name, for exec */
  name: string;
  /** stop (cleanly, for a server) and remove; never throws */
  remove(): Promise<void>;
}

/** Create and start a helper (a leftover of the same name removed first); killed when `signal` aborts. */
async function startHelper(
  docker: DockerClient,
  opts: ContainerCreateOptions,
  log: Logger,
  signal: AbortSignal,
  stopS: number,
): Promise<Helper> {
  const name = opts.name ?? "";
  await removeAndWait(docker, name);
  const container = await docker.createContainer(opts);
  const kill = () => void container.kill().catch(() => undefined);
  signal.addEventListener("abort", kill, { once: true });
  const remove = async () => {
    signal.removeEventListener("abort", kill);
    if (stopS > 0)
      await container.stop({ t: stopS }).catch((err: unknown) => {
        if (!isNotModified(err) && !isNotFound(err))
          log.warn("backup: a helper did not stop cleanly", { name, error: String(err) });
      });
    await removeContainer(docker, container.id).catch((err: unknown) =>
      log.warn("backup: a helper could not be removed", { name, error: String(err) }),
    );
  };
  try {
    await container.start();
  } catch (err) {
    await remove();
    throw err;
  }
  return { name, remove };
}

/** The stopped pod's helper, started. */
export const startPodHelper = (
  docker: DockerClient,
  prefix: string,
  pod: string,
  info: ContainerInspectInfo,
  log: Logger,
  signal: AbortSignal,
) => startHelper(docker, podHelperOptions(prefix, pod, info), log, signal, 0);

// The server of a service helper accepting connections, or why not (one line on stderr).
const READY = `set -u
[ -f "$1/.svc-initialized" ] || { echo "the service was never initialised" >&2; exit 3; }
for _ in $(seq 1 $(($2 * 10))); do "$3" >/dev/null 2>&1 && exit 0; sleep 0.1; done
echo "the server did not accept connections in $2 s" >&2; exit 4`;

/**
 * The stopped sidecar's data served by a helper of its own until `remove`; the failure's one line
 * (the helper gone again) when its server does not come up.
 */
export async function startServiceHelper(
  docker: DockerClient,
  prefix: string,
  pod: string,
  kind: ServiceKind,
  sidecar: ContainerInspectInfo,
  log: Logger,
  signal: AbortSignal,
): Promise<{ ok: true; helper: Helper } | { ok: false; reason: string }> {
  const helper = await startHelper(
    docker,
    serviceHelperOptions(prefix, pod, kind, sidecar),
    log,
    signal,
    SERVICE_STOP_S,
  );
  const ready = await execInContainer(
    docker,
    helper.name,
    [BASH, "-c", READY, "bash", SERVICE_DATA, String(SERVICE_READY_S), SVC_READY],
    {
      workingDir: "/",
      maxOutputBytes: 4096,
      signal: AbortSignal.any([signal, AbortSignal.timeout((SERVICE_READY_S + 30) * 1000)]),
    },
  ).catch(async (err: unknown) => {
    // the server exited (the helper with it): its own last words say why
    if (dockerStatus(err) === 409)
      return { exitCode: -1, stderr: `it exited: ${await containerLogTail(docker, helper.name)}` };
    await helper.remove();
    throw err;
  });
  if (ready.exitCode === 0) return { ok: true, helper };
  await helper.remove();
  return {
    ok: false,
    reason: `the ${kind} server of the stopped pod did not start: ${tail(ready.stderr) || `exit ${ready.exitCode}`}`,
  };
}

/**
 * At the agent's start: helpers of jobs a previous run did not finish (stopped cleanly, a server
 * among them, then removed).
 */
export async function removeBackupLeftovers(
  docker: DockerClient,
  prefix: string,
  log: Logger,
): Promise<void> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_PREFIX}=${prefix}`, LABEL_BACKUP_POD] },
  });
  for (const c of list) {
    const kind = c.Labels[LABEL_HELPER];
    if (kind !== HELPER_BACKUP_POD && kind !== HELPER_BACKUP_SERVICE) continue;
    const container = docker.getContainer(c.Id);
    if (c.State === "running") await container.stop({ t: SERVICE_STOP_S }).catch(() => undefined);
    await removeContainer(docker, c.Id);
    log.warn("removed a backup's leftover helper", { pod: c.Labels[LABEL_BACKUP_POD], kind });
  }
}
