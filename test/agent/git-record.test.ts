import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PodRecord } from "../../agent/git/record";

/**
 * The git releases record travelling with a pod that moves hosts (docs/hosts.md "Emptying a host"):
 * the old host exports it beside the home, the new one takes it only when it parses and it has none.
 */
describe("a pod's releases record across hosts", () => {
  const dirs: string[] = [];
  const hostDirs = async () => {
    const root = await mkdtemp(join(tmpdir(), "podhost-record-"));
    dirs.push(root);
    return { stateDir: join(root, "state"), cacheDir: join(root, "cache") };
  };
  const release = (id: string, at: number) => ({
    id,
    commit: { sha: "a".repeat(40), message: `release ${id}` },
    detected: {
      preset: "static" as const,
      install_command: null,
      build_command: null,
      start_command: null,
      port: 8080,
    },
    depsKey: null,
    webRoot: null,
    at,
  });

  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it("exported from one host, taken by another once, never over a record it has, never malformed", async () => {
    const old = new PodRecord(await hostDirs(), "shop");
    expect(await old.exportReleases()).toBeNull();
    const record = { current: "r2", releases: [release("r2", 2), release("r1", 1)] };
    await old.saveReleases(record);
    const text = await old.exportReleases();
    expect(text).not.toBeNull();

    const moved = new PodRecord(await hostDirs(), "shop");
    expect(await moved.importReleases(text as string)).toBe(true);
    expect(await moved.releases()).toEqual(record);
    // a replayed create after a deploy on the new host keeps what the new host has
    await moved.saveReleases({ current: "r3", releases: [release("r3", 3), ...record.releases] });
    expect(await moved.importReleases(text as string)).toBe(false);
    expect((await moved.releases()).current).toBe("r3");

    const fresh = new PodRecord(await hostDirs(), "shop");
    expect(await fresh.importReleases("{not json")).toBe(false);
    expect(await fresh.importReleases(JSON.stringify({ current: 1, releases: "x" }))).toBe(false);
    expect(await fresh.releases()).toEqual({ current: null, releases: [] });
  });
});
