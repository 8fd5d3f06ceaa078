import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

/**
 * scripts/host/ensure-agent-node.sh: the agent's Node (22 LTS or later) from the npm registry when the
 * machine's is older, installed once into the cache and found there afterwards (docs/hosts.md, "The
 * agent's Node"). Each case has a cache directory of its own; the npm tarballs the pod images already
 * fetched (/var/cache/podhost/npm) are lent to it, so a run on a prepared machine downloads nothing.
 */

const ROOT = path.resolve(__dirname, "../..");
const SCRIPT = path.join(ROOT, "scripts", "host", "ensure-agent-node.sh");
const SHARED_TARBALLS = path.join(process.env.PODHOST_CACHE ?? "/var/cache/podhost", "npm");
const dir = mkdtempSync(path.join(tmpdir(), "agent-node-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pinned = () => {
  const rows = spawnSync(
    "awk",
    ["$1 == 22 { print $2 }", path.join(ROOT, "images", "base", "node-versions")],
    {
      encoding: "utf8",
    },
  );
  return rows.stdout.trim();
};

function cacheDir(name: string) {
  const cache = path.join(dir, name);
  mkdirSync(cache, { recursive: true });
  if (existsSync(SHARED_TARBALLS)) symlinkSync(SHARED_TARBALLS, path.join(cache, "npm"));
  return cache;
}

function run(cache: string, pathVar = process.env.PATH ?? "") {
  const started = performance.now();
  const r = spawnSync("bash", [SCRIPT], {
    env: { ...process.env, PODHOST_CACHE: cache, PATH: pathVar },
    encoding: "utf8",
    timeout: 300_000,
  });
  return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr, ms: performance.now() - started };
}

const versionOf = (node: string) => spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();

describe("ensure-agent-node.sh", () => {
  it("with the machine's Node older than 22: installs the pinned Node 22 once; a second run finds it and does nothing", async () => {
    const machine = Number(process.versions.node.split(".")[0]);
    if (machine >= 22) return; // nothing to install on such a machine (the next case covers it)
    const cache = cacheDir("install");
    const first = run(cache);
    expect(first.code, first.stderr).toBe(0);
    const node = first.stdout;
    expect(node).toBe(path.join(cache, "agent-node", `v${pinned()}`, "bin", "node"));
    expect(versionOf(node)).toBe(`v${pinned()}`);
    const installedAt = statSync(node).mtimeMs;

    // again, without npm (nor anything else) on PATH but the machine's node: nothing to fetch or write
    const bare = path.join(dir, "bare-bin");
    mkdirSync(bare, { recursive: true });
    symlinkSync(process.execPath, path.join(bare, "node"));
    const second = run(cache, `${bare}:/usr/bin:/bin`);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe(node);
    expect(second.stderr).toBe("");
    expect(statSync(node).mtimeMs).toBe(installedAt);
    // a look, not an install: far quicker than unpacking ~50 MB
    expect(second.ms).toBeLessThan(Math.max(first.ms, 2_000));
  });

  it("a machine Node of 22 or later is used as it is, nothing installed", () => {
    const cache = cacheDir("own");
    const bin = path.join(dir, "own-bin");
    mkdirSync(bin, { recursive: true });
    const fake = path.join(bin, "node");
    writeFileSync(fake, "#!/bin/sh\necho v24.3.0\n");
    chmodSync(fake, 0o755);
    const r = run(cache, `${bin}:/usr/bin:/bin`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(fake);
    expect(existsSync(path.join(cache, "agent-node"))).toBe(false);
  });
});
