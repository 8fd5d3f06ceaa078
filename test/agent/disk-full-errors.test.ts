import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { fullDisk, namingFullDisk, sayWhyTarFailed } from "../../agent/disk/full";
import { writeAtomic } from "../../agent/disk/write-atomic";
import { toAgentError } from "../../agent/docker/client";
import { fileFailure } from "../../agent/files/run";
import { hostCacheFull } from "../../agent/git/commit";
import { classifyGitFailure, HOST_CACHE_FULL } from "../../agent/git/fetch";
import { stepFailure } from "../../agent/git/prepare";

/**
 * A full disk is named, never a 500 with a tool's raw words (test/chaos/disk-full.test.ts runs the
 * same against real full file systems): the pod's own disk (its quota, EDQUOT) apart from the disk
 * it is on (ENOSPC), the agent's own state apart from the engine's, and no host path in the text.
 */
describe("a full disk is named", () => {
  it("tells the pod's quota from a full device", () => {
    expect(fullDisk("mkdir: cannot create directory '/home/pod_user/.pod/backup': Disk quota exceeded")).toBe(
      "quota",
    );
    expect(fullDisk("cat: write error: No space left on device")).toBe("device");
    expect(fullDisk("tar: ./a: Cannot open: Permission denied")).toBeNull();
  });

  it("a backup's reason leads with the full disk; other reasons stay as they are", () => {
    expect(namingFullDisk("preparing the backup failed (exit 70): mkdir: …: Disk quota exceeded")).toMatch(
      /^the pod's disk is full \(its plan's disk limit\): .*: preparing the backup failed/,
    );
    expect(namingFullDisk("archiving failed (exit 72): tar: write error: No space left on device")).toMatch(
      /^the host's disk is full .*: archiving failed/,
    );
    expect(namingFullDisk("expected directory missing: ~/app")).toBe("expected directory missing: ~/app");
  });

  it("a file write on a full disk is a 409 naming it", () => {
    const quota = fileFailure("writing /home/pod_user/app/a", 1, "cat: write error: Disk quota exceeded\n");
    expect(quota.code).toBe("conflict");
    expect(quota.message).toBe(
      "writing /home/pod_user/app/a: the pod's disk is full (its plan's disk limit): delete files or move to a bigger plan",
    );
    const device = fileFailure("writing /tmp/a", 1, "cat: write error: No space left on device\n");
    expect(device.code).toBe("conflict");
    expect(device.message).toMatch(/: the disk is full/);
  });

  it("the engine's and the agent's own ENOSPC are a 409 of the storage, without host paths", () => {
    const engine = toAgentError(
      Object.assign(new Error("(HTTP code 500) server error"), {
        statusCode: 500,
        json: {
          message:
            "failed to copy files: userspace copy failed: write /var/lib/docker/volumes/p-a-home/_data/.pod/crontab: no space left on device",
        },
      }),
      "pod.create",
    );
    expect(engine.code).toBe("conflict");
    expect(engine.component).toBe("storage");
    expect(engine.message).toBe(
      "pod.create: the host's disk is full (no space left on the device the pod's files are on)",
    );
    // the engine's own root full (test/chaos/engine-full.test.ts): its layers, its volume records
    for (const words of [
      "mkdir /var/lib/docker/overlay2/6713cb8a68e3be2e-init: no space left on device",
      "create p-a-home: error while creating volume root path '/var/lib/docker/volumes/p-a-home': mkdir /var/lib/docker/volumes/p-a-home: no space left on device",
    ]) {
      const root = toAgentError(
        Object.assign(new Error("(HTTP code 500) server error"), {
          statusCode: 500,
          json: { message: words },
        }),
        "pod.create",
      );
      expect(root.code).toBe("conflict");
      expect(root.component).toBe("storage");
      expect(root.message).toBe(
        "pod.create: the engine's disk is full (no space left where the host keeps images and containers)",
      );
    }
    const own = toAgentError(
      Object.assign(new Error("ENOSPC: no space left on device, write"), {
        code: "ENOSPC",
        syscall: "write",
      }),
      "pod.create",
    );
    expect(own.code).toBe("conflict");
    expect(own.message).toMatch(/^pod\.create: the host agent's disk is full/);
    // anything else from the engine stays what it was
    const other = toAgentError(
      Object.assign(new Error("(HTTP code 500) server error"), {
        statusCode: 500,
        json: { message: "boom" },
      }),
      "pod.create",
    );
    expect(other.code).toBe("internal");
  });

  it("a git fetch on a full disk: the host cache's own limit apart from the full device, both make room", () => {
    const limits = { timeoutMs: 60_000, maxFetchBytes: 1 << 20, allowHttpLoopback: false };
    const fetched = (stderr: string) =>
      classifyGitFailure(
        { code: 128, stdout: Buffer.alloc(0), stderr, timedOut: false, tooLarge: false },
        limits,
      );
    const cache = fetched("error: unable to write file: Disk quota exceeded");
    expect(cache.message).toBe(HOST_CACHE_FULL);
    const device = fetched("fatal: write error: No space left on device");
    expect(device.message).toMatch(/^the host's disk is full/);
    expect(device.cls).not.toBe("repo_too_large");
    expect(hostCacheFull(cache)).toBe(true);
    expect(hostCacheFull(device)).toBe(true);
  });

  it("a build or install on a full disk leads with it; its class and command stay", () => {
    // what npm prints when a build script's write meets the pod's quota (test/chaos/disk-full.test.ts)
    const npm = [
      "head: error writing 'big.bin': Disk quota exceeded",
      "npm error Lifecycle script `build` failed with error:",
      "npm error code 1",
      "",
    ].join("\n");
    const quota = stepFailure({ step: "build", status: 1 }, "npm run build", npm);
    expect(quota.cls).toBe("build_script");
    expect(quota.message).toBe(
      "the pod's disk is full (its plan's disk limit): delete files or move to a bigger plan: the build failed with exit status 1: npm run build",
    );
    const device = stepFailure(
      { step: "install", status: 1 },
      "npm ci",
      "npm error nospc No space left on device",
    );
    expect(device.cls).toBe("dependency_install");
    expect(device.message).toMatch(
      /^a disk the build wrote to is full \(no space left on device\): installing/,
    );
    // any other failure reads as before
    expect(stepFailure({ step: "build", status: 137 }, "npm run build", "Killed").message).toBe(
      "the build failed with exit status 137 (killed: out of memory or time): npm run build",
    );
  });
});

const run = promisify(execFile);

describe("after a failed `tar -x`, the disk's own words (sayWhyTarFailed)", () => {
  const untarInto = async (dir: string) => {
    // a truncated archive: tar fails, as it does after a short write, without the reason
    const script = `printf 'not a tar archive' | tar -x -f - -C "$1" 2>/dev/null || { ${sayWhyTarFailed('"$1"')}; exit 71; }`;
    return run("bash", ["-c", script, "bash", dir]).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
  };

  it("on a full disk, stderr names it (here /dev/full answers ENOSPC), and no file is left", async () => {
    const dir = await mkdtemp(join(tmpdir(), "podhost-tarfull-"));
    try {
      await symlink("/dev/full", join(dir, ".podhost-room"));
      const r = await untarInto(dir);
      expect(r.code).toBe(71);
      expect(fullDisk(r.stderr)).toBe("device");
      expect(namingFullDisk(`unpacking failed (exit 71): ${r.stderr}`)).toMatch(/^the host's disk is full/);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("with room, it says nothing and leaves nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "podhost-tarfull-"));
    try {
      const r = await untarInto(dir);
      expect(r).toEqual({ code: 71, stderr: "" });
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the agent's state files on a full disk (writeAtomic)", () => {
  // a 64 KiB tmpfs of the test's own: mounting needs root
  it.skipIf(process.getuid?.() !== 0)(
    "a refused write keeps the old file and leaves no temp file",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "podhost-statefull-"));
      await run("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir]);
      try {
        const file = join(dir, "pod.json");
        await writeAtomic(file, '["www.example.test"]');
        await writeFile(join(dir, "filler"), Buffer.alloc(1024 * 1024)).catch(() => undefined);
        const err = await writeAtomic(file, JSON.stringify(["a.example.test", "b.example.test"])).catch(
          (e: unknown) => e,
        );
        expect((err as { code?: string }).code).toBe("ENOSPC");
        expect(toAgentError(err, "pod.domains.set").message).toBe(
          "pod.domains.set: the host agent's disk is full (no space left to write its state)",
        );
        expect(await readFile(file, "utf8")).toBe('["www.example.test"]');
        expect((await readdir(dir)).sort()).toEqual(["filler", "pod.json"]);
      } finally {
        await run("umount", [dir]);
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
