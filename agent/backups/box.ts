import type { ContainerCreateOptions } from "dockerode";
import type { DockerClient } from "../docker/client";
import { POD_ISOLATION } from "../docker/isolation";
import { LABEL_PREFIX } from "../docker/naming";
import { LABEL_HELPER } from "../docker/pod-user";
import { removeContainer } from "../docker/resources";
import { removeAndWait } from "../git/build";

/**
 * The throwaway container a test-restore runs in (and, in a pod's network namespace, the client of
 * a self-run database: ./self-run-db.ts): no network at all, a read-only root, a small
 * tmpfs as its only writable place (its pages count against the memory limit), no capabilities,
 * the pods' seccomp profile, no-new-privileges, uid 1000, memory/pids/CPU limits and a wall clock.
 * An archive is only ever listed or streamed in here: a hostile one (a gzip bomb, a million
 * members, `../` names) spends this container's limits, never the host's.
 */
export const HELPER_VERIFY = "backup-verify";
export const BOX_LIMITS = {
  memoryBytes: 768 * 1024 * 1024,
  scratchBytes: 320 * 1024 * 1024,
  pids: 64,
  nanoCpus: 1e9,
  timeoutS: 1800,
};

export const boxName = (prefix: string, backupId: string) => `${prefix}-backup-verify-${backupId}`;

/**
 * The box's options; `scratchBytes` sizes its /tmp (and the memory limit grows with it, as tmpfs
 * pages are memory), `runSvc` adds the service images' socket directory for a scratch server,
 * `network` (`container:<pod>`) puts it in a pod's network namespace (a self-run database's client).
 */
export function boxOptions(
  prefix: string,
  backupId: string,
  image: string,
  size: { scratchBytes: number; runSvc?: boolean; network?: string } = {
    scratchBytes: BOX_LIMITS.scratchBytes,
  },
): ContainerCreateOptions {
  const memory = BOX_LIMITS.memoryBytes + Math.max(0, size.scratchBytes - BOX_LIMITS.scratchBytes);
  const tmpfs: Record<string, string> = {
    "/tmp": `rw,nosuid,nodev,noexec,mode=1777,size=${size.scratchBytes}`,
  };
  if (size.runSvc) tmpfs["/run/svc"] = "rw,nosuid,nodev,noexec,uid=1000,gid=1000,mode=0700,size=16m";
  return {
    name: boxName(prefix, backupId),
    Image: image,
    User: "1000:1000",
    WorkingDir: "/tmp",
    Cmd: ["/bin/sleep", String(BOX_LIMITS.timeoutS + 60)],
    Labels: { [LABEL_PREFIX]: prefix, [LABEL_HELPER]: HELPER_VERIFY },
    NetworkDisabled: !size.network,
    HostConfig: {
      ...POD_ISOLATION,
      Tmpfs: tmpfs,
      Memory: memory,
      MemorySwap: memory,
      NanoCpus: BOX_LIMITS.nanoCpus,
      PidsLimit: BOX_LIMITS.pids,
      OomScoreAdj: 800,
      NetworkMode: size.network ?? "none",
      AutoRemove: false,
      LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
    },
  };
}

/** Start a box (a leftover of the same backup's earlier run removed first); its removal. */
export async function startBox(
  docker: DockerClient,
  opts: ContainerCreateOptions,
): Promise<() => Promise<void>> {
  await removeAndWait(docker, opts.name ?? "");
  const container = await docker.createContainer(opts);
  const remove = () => removeContainer(docker, container.id);
  try {
    await container.start();
  } catch (err) {
    await remove();
    throw err;
  }
  return remove;
}
