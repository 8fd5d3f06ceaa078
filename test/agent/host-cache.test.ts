import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, statfs, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { btrfs } from "../../agent/disk/btrfs";
import { hostCacheVolume, sweepHostCache } from "../../agent/disk/host-cache";
import { createHandlers } from "../../agent/handlers/pods";
import type { HandlerTable } from "../../agent/handlers/types";
import { type GitServer, startGitServer } from "../support/git-server";
import { testPodDisk } from "../support/pod-disk";
import { type Agent, startAgent, until } from "./helpers";

/**
 * The host cache (agent/disk/host-cache.ts): what a host fetches for others — repository lookups,
 * deploy caches, coding agents' trees — in one subvolume of the pod disk with its own limit, so a
 * stranger's lookup cannot fill the host; and the sweep that clears what nothing uses.
 */

describe("the host cache's sweep (no Docker)", () => {
  it("removes lookups' leftovers, caches of pods gone from the host and caches in the old place", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "host-cache-state-"));
    const cacheDir = await mkdtemp(join(tmpdir(), "host-cache-"));
    try {
      const made = async (...parts: string[]) => {
        const dir = join(...parts);
        await mkdir(dir, { recursive: true });
        return dir;
      };
      const old = await made(cacheDir, "git", "inspect-old");
      const hourAgo = new Date(Date.now() - 2 * 3_600_000);
      await utimes(old, hourAgo, hourAgo);
      await made(cacheDir, "git", "inspect-running");
      await made(cacheDir, "git", "gone", "repo.git");
      await made(cacheDir, "git", "kept", "repo.git");
      await made(stateDir, "git", "kept", "repo.git");
      await made(stateDir, "git", "kept", "outcomes");
      await made(stateDir, "git", ".home");
      // each pod's cache is looked at under its deploy lock
      const locked: string[] = [];
      const removed = await sweepHostCache(
        { stateDir, cacheDir },
        async (pod) => pod === "kept",
        (pod, fn) => {
          locked.push(pod);
          return fn();
        },
      );
      expect(locked.sort()).toEqual(["gone", "kept"]);
      expect(removed.sort()).toEqual(
        [old, join(cacheDir, "git", "gone"), join(stateDir, "git", "kept", "repo.git")].sort(),
      );
      expect((await readdir(join(cacheDir, "git"))).sort()).toEqual(["inspect-running", "kept"]);
      // what the host remembers of a pod's deploys is no cache: it stays
      expect((await readdir(join(stateDir, "git", "kept"))).sort()).toEqual(["outcomes"]);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
      await rm(cacheDir, { recursive: true, force: true });
    }
  });
});

describe("attacker: a lookup larger than the host cache", () => {
  let agent: Agent;
  let handlers: HandlerTable;
  let server: GitServer;
  const LIMIT_MB = 24;

  beforeAll(async () => {
    // a per-fetch cap far above the cache's limit: the limit is what stops this fetch
    agent = await startAgent({ PODHOST_HOST_CACHE_MB: String(LIMIT_MB), PODHOST_GIT_MAX_FETCH_MB: "512" });
    handlers = createHandlers(agent);
    server = await startGitServer();
    // incompressible: the pack is as large as the files
    await server.createRepo("huge", {
      "a.bin": randomBytes(24 * 1024 * 1024),
      "b.bin": randomBytes(24 * 1024 * 1024),
      "package.json": "{}",
    });
    await server.createRepo("small", { "index.html": "<h1>hi</h1>" });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await agent?.cleanup();
  });

  it("fails with a clear error, leaves nothing behind, and the host's free space is what it was", async () => {
    const disk = testPodDisk();
    const volume = hostCacheVolume(agent.config.namePrefix);
    expect(agent.config.cacheDir).toBe(disk.dirOf(volume));
    expect((await disk.usage(volume))?.maxReferencedBytes).toBe(LIMIT_MB * 1024 * 1024);
    // what the host cache holds (its qgroup), and the pod disk's free space, each after a commit:
    // btrfs gives freed extents back with the transaction after the delete
    const settled = async () => {
      await btrfs(["filesystem", "sync", disk.root]);
      const s = await statfs(disk.root);
      return { cache: (await disk.usage(volume))?.referencedBytes ?? 0, free: s.bavail * s.bsize };
    };
    const before = await settled();

    const huge = await handlers["repo.inspect"](
      { source: { url: server.url("huge"), branch: "main" } },
      agent.ctx,
    ).then(
      () => "fetched",
      (e: Error & { code?: string }) => ({ code: e.code, message: e.message }),
    );
    expect(huge).toEqual({
      code: "payload_too_large",
      message:
        "repo_too_large: the host's space for fetched repositories is full (its own disk limit): the fetch was stopped and removed; try again later",
    });
    expect(await readdir(join(agent.config.cacheDir, "git"))).toEqual([]);
    const after = await until(
      async () => {
        const now = await settled();
        return now.cache - before.cache < 1024 * 1024 ? now : undefined;
      },
      20_000,
      250,
    );
    console.log(
      `host cache ${before.cache} → ${after?.cache} bytes; pod disk free ${before.free} → ${after?.free}`,
    );
    expect(after?.cache).toBeDefined();
    // the pod disk is shared with whatever else runs on this machine: a margin well under the fetch
    expect(Math.abs((after?.free ?? 0) - before.free)).toBeLessThan(8 * 1024 * 1024);

    // the cache works on after it: a small lookup fits
    const small = await handlers["repo.inspect"](
      { source: { url: server.url("small"), branch: "main" } },
      agent.ctx,
    );
    expect(small.preset).toBe("static");
  }, 120_000);
});
