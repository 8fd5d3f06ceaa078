import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AgentConfig } from "../config";
import type { KeyedLock } from "../handlers/keyed-lock";
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
 * The deploy caches are only caches, and one tenant's pods must not fill the space everyone's
 * fetches share: a fetch (deploy, lookup, coding agent) that finds the cache full makes room
 * (`makeRoom`: other pods' deploy caches, least recently used first, never one in use) and tries
 * once more; and a pod's deploy cache larger than a quarter of the limit is dropped after its
 * deploy (`capDeployCache`), its next deploy fetching afresh.
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

/** What of a pod's deploy cache may stay after its deploy: a quarter of the host cache. */
export const deployCacheCap = (config: Pick<AgentConfig, "hostCacheBytes">) =>
  Math.floor(config.hostCacheBytes / 4);

/** Frees room in a full host cache for one more fetch; returns the deploy caches it removed. */
export type MakeRoom = (except?: string) => Promise<string[]>;

/**
 * `makeRoom` with the agent's locks: a pod's deploy cache is removed only under its deploy lock
 * (`git:<pod>`), and only when nothing holds or awaits that lock (a deploy in progress, or one
 * waiting, keeps its cache; a fetch that makes room while holding its own pod's lock never waits
 * on another's, so two deploys making room cannot wait on each other).
 */
export const roomMaker =
  (config: Pick<AgentConfig, "cacheDir" | "hostCacheBytes" | "git">, locks: KeyedLock): MakeRoom =>
  (except) =>
    makeRoom(config, (pod, fn) => locks.tryRun(`git:${pod}`, fn), except);

/**
 * Removes the deploy caches (`git/<pod>/`) of pods other than `except`, least recently used
 * first (a deploy's fetch touches its `repo.git`), until the host cache has room for a fetch as
 * large as the per-fetch cap (at most half the limit) or no deploy cache is left to take. A pod's
 * cache is removed through `tryLock`, which answers null for a pod whose cache is in use: it
 * stays. Lookups' repositories and coding agents' trees are never taken here. One pass: bounded.
 */
export async function makeRoom(
  config: Pick<AgentConfig, "cacheDir" | "hostCacheBytes" | "git">,
  tryLock: (pod: string, fn: () => Promise<boolean>) => Promise<boolean> | null,
  except?: string,
): Promise<string[]> {
  const gitDir = join(config.cacheDir, "git");
  const want = Math.min(config.git.maxFetchBytes, Math.floor(config.hostCacheBytes / 2));
  let free = config.hostCacheBytes - (await diskBytes(config.cacheDir));
  const caches: { pod: string; path: string; used: number }[] = [];
  for (const entry of await readdir(gitDir, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || entry.name.startsWith("inspect-")) continue;
    if (entry.name === except) continue;
    const path = join(gitDir, entry.name);
    const used = await stat(join(path, "repo.git")).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    caches.push({ pod: entry.name, path, used });
  }
  const removed: string[] = [];
  for (const c of caches.sort((a, b) => a.used - b.used)) {
    if (free >= want) break;
    const gone = await tryLock(c.pod, async () => {
      const bytes = await diskBytes(c.path);
      await rm(c.path, { recursive: true, force: true });
      free += bytes;
      return true;
    })?.catch(() => false);
    if (gone) removed.push(c.path);
  }
  return removed;
}

/**
 * `fetch`, and when it fails because the host cache is full (`full`), room made (`room`) and
 * `fetch` once more; the first failure stands when no room could be made.
 */
export async function withRoom<T>(
  fetch: () => Promise<T>,
  full: (err: unknown) => boolean,
  room: (() => Promise<string[]>) | undefined,
): Promise<T> {
  try {
    return await fetch();
  } catch (err) {
    if (!room || !full(err)) throw err;
    if ((await room().catch(() => [])).length === 0) throw err;
    return fetch();
  }
}

/**
 * After a deploy (under the pod's deploy lock): the pod's deploy cache is removed when it holds
 * more than `maxBytes`, so no one pod keeps a large share of the host cache; its next deploy
 * fetches afresh. Returns whether it was removed.
 */
export async function capDeployCache(repoDir: string, maxBytes: number): Promise<boolean> {
  if ((await diskBytes(repoDir)) <= maxBytes) return false;
  await rm(repoDir, { recursive: true, force: true });
  return true;
}

/** The disk space the files under `dir` take (allocated blocks; what the qgroup counts, near enough). */
async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    total += await stat(join(entry.parentPath, entry.name)).then(
      (s) => Math.max(s.size, s.blocks * 512),
      () => 0,
    );
  }
  return total;
}
