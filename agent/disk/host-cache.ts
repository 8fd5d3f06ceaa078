import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AgentConfig } from "../config";
import { podDiskOf } from "./pod-disk";

/**
 * What the host fetches for others, off any pod's disk: repository lookups' temporary
 * repositories (`git/inspect-*`), each pod's deploy cache (`git/<pod>/repo.git`) and the coding
 * agents' package trees (`coding-agents/`). Anyone signed in can make a host fetch (a lookup needs no
 * pod), so all of it lives in one btrfs subvolume of its own on the pods' disk,
 * `<prefix>-host-cache`, in a level-1 qgroup limited to PODHOST_HOST_CACHE_MB like a pod's home
 * (./pod-disk.ts): a fetch that would pass it fails with EDQUOT, is removed, and the host's own disk
 * never sees it. A sweep (`sweepHostCache`) clears what nothing uses any more.
 *
 * Without a pod disk (PODHOST_POD_DISK_ROOT empty) the caches stay in the state directory, without
 * a limit, as pods' homes do then.
 */

export const hostCacheVolume = (prefix: string) => `${prefix}-host-cache`;

/** a lookup's temporary repository older than this is a leftover (a lookup takes minutes at most) */
const STALE_LOOKUP_MS = 60 * 60_000;

/** The directory the caches live in, made (or its limit set again) on the pods' disk. */
export async function prepareHostCache(config: AgentConfig): Promise<string> {
  const disk = podDiskOf(config.podDiskRoot);
  if (!disk) return config.stateDir;
  const volume = hostCacheVolume(config.namePrefix);
  if (await disk.exists(volume)) await disk.setLimit(volume, config.hostCacheBytes);
  else await disk.create(volume, config.hostCacheBytes);
  const dir = disk.dirOf(volume);
  await mkdir(join(dir, "git"), { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * Removes lookups' leftovers (a lookup interrupted by an agent restart), the deploy caches of pods
 * that are no longer on this host (`onHost` says which are), and deploy caches left in the state
 * directory by agents from before the host cache. A pod's cache is looked at and removed under
 * `podLock` (the pod's deploy lock: a deploy never loses its cache mid-fetch). Returns what it
 * removed.
 */
export async function sweepHostCache(
  config: Pick<AgentConfig, "stateDir" | "cacheDir">,
  onHost: (pod: string) => Promise<boolean>,
  podLock: (pod: string, fn: () => Promise<boolean>) => Promise<boolean> = (_, fn) => fn(),
  now = Date.now(),
): Promise<string[]> {
  const removed: string[] = [];
  const gitDir = join(config.cacheDir, "git");
  for (const entry of await readdir(gitDir, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
    const path = join(gitDir, entry.name);
    const remove = async () => {
      await rm(path, { recursive: true, force: true });
      return true;
    };
    const gone = entry.name.startsWith("inspect-")
      ? now - (await stat(path)).mtimeMs > STALE_LOOKUP_MS && (await remove())
      : await podLock(entry.name, async () => !(await onHost(entry.name)) && (await remove()));
    if (gone) removed.push(path);
  }
  if (config.cacheDir !== config.stateDir) {
    const legacy = join(config.stateDir, "git");
    for (const entry of await readdir(legacy, { withFileTypes: true }).catch(() => [])) {
      const path = entry.name.startsWith("inspect-")
        ? join(legacy, entry.name)
        : join(legacy, entry.name, "repo.git");
      if (!entry.isDirectory() || !(await stat(path).catch(() => null))) continue;
      await rm(path, { recursive: true, force: true });
      removed.push(path);
    }
  }
  return removed;
}
