import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { isExactAgentVersion } from "../../shared/coding-agents";
import type { CodingAgentsConfig } from "../config";
import { type MakeRoom, withRoom } from "../disk/host-cache";
import { CappedBytes } from "../docker/capped";
import { AgentError } from "../errors";
import { KeyedLock } from "../handlers/keyed-lock";

/**
 * The host side of a coding agent install: the package tree of `<package>@<version>` fetched from
 * the npm registry onto the host, once per package version, and kept in the agent's state dir for
 * every pod of the host (`<host cache>/coding-agents/<package>@<version>/lib/node_modules/<package>`;
 * the host cache has its own disk limit, agent/disk/host-cache.ts).
 *
 * Nothing of the package runs here: `npm install -g --ignore-scripts --no-bin-links` only resolves,
 * downloads (checked against the registry's integrity hashes) and unpacks. The package's own
 * install scripts (many agents copy a platform binary out of an optional dependency) run later in
 * the pod, as pod_user (./pod-install.ts). The host's platform is the pods' (same kernel, glibc
 * images), so npm picks the optional dependencies the pods need.
 *
 * Bounds: one fetch takes at most `fetchTimeoutMs` (npm is killed), a tree over `maxTreeBytes` is
 * refused, and past `maxCacheBytes` the least recently used trees go (never one being fetched or
 * copied); a fetch that finds the host cache full makes room there and tries once more. npm argv only: the package name comes from the catalog, the version passed the
 * protocol's exact-or-dist-tag check.
 *
 * A fetch works in a scratch directory of its own and renames the checked tree into place, so a
 * tree is there whole or not at all. An agent killed mid-fetch leaves its scratch directory (the
 * partial download) behind: any scratch directory this process did not make is removed as a fetch
 * starts and after it (the killed install's re-sent command fetches again at once).
 */

export interface PreparedTree {
  /** `<dir>/lib/node_modules/<package>` is the package */
  dir: string;
  version: string;
  /** the resolved version's `engines.node`, if any */
  enginesNode: string | null;
  bytes: number;
}

interface Marker {
  version: string;
  enginesNode: string | null;
  bytes: number;
}

const MARKER = ".podhost-ready.json";
const SCRATCH_PREFIX = ".fetch-";
const MAX_FETCHES = 2;
/** what npm says about one failure: its first lines are enough */
const NPM_OUTPUT_MAX = 64 * 1024;

export class CodingAgentCache {
  private readonly root: string;
  private readonly locks = new KeyedLock();
  /** trees being copied into pods: never evicted meanwhile */
  private readonly inUse = new Map<string, number>();
  /** registry fetches at once on this host (each is an npm process unpacking up to hundreds of MB) */
  private readonly fetches = new Limiter(MAX_FETCHES);
  /** this process's fetches' scratch directories; any other is a killed agent's partial fetch */
  private readonly scratches = new Set<string>();

  constructor(
    stateDir: string,
    private readonly config: CodingAgentsConfig,
    /** room in a full host cache: pods' deploy caches removed (agent/disk/host-cache.ts) */
    private readonly makeRoom?: MakeRoom,
  ) {
    this.root = path.join(stateDir, "coding-agents");
  }

  /**
   * `<package>@<version>` resolved (a dist-tag becomes the version it points at), its tree on the
   * host, and `fn` run with it; the tree cannot be evicted until `fn` has ended.
   */
  async withTree<T>(
    pkg: string,
    spec: string,
    signal: AbortSignal,
    fn: (tree: PreparedTree) => Promise<T>,
  ): Promise<T> {
    const tree = await this.prepare(pkg, spec, signal);
    try {
      return await fn(tree);
    } finally {
      this.release(tree.dir);
    }
  }

  /** The tree, retained (see `release`) before its lock is let go, so no eviction can take it meanwhile. */
  private async prepare(pkg: string, spec: string, signal: AbortSignal): Promise<PreparedTree> {
    // Asked even for an exact version: the registry says whether it exists, and its engines.
    const resolved = await this.resolve(pkg, spec, signal);
    const dir = this.dirOf(pkg, resolved.version);
    let fetched = false;
    const tree = await this.locks.run(dir, async (): Promise<PreparedTree> => {
      const ready = await readMarker(dir);
      if (ready) {
        const now = new Date();
        await utimes(path.join(dir, MARKER), now, now).catch(() => undefined);
        this.retain(dir);
        return { dir, ...ready };
      }
      // a full host cache: deploy caches make room, and the fetch runs once more
      const room = this.makeRoom;
      const marker = await this.fetches.run(() =>
        withRoom(() => this.fetch(pkg, resolved, dir, signal), hostCacheFull, room && (() => room())),
      );
      fetched = true;
      this.retain(dir);
      return { dir, ...marker };
    });
    // Outside the tree's lock: eviction takes other trees' locks.
    if (fetched) await this.evict().catch(() => undefined);
    return tree;
  }

  /** `npm install --ignore-scripts` into a scratch prefix, checked, then renamed into place as `dir`. */
  private async fetch(
    pkg: string,
    resolved: { version: string; enginesNode: string | null },
    dir: string,
    signal: AbortSignal,
  ): Promise<Marker> {
    await mkdir(this.root, { recursive: true });
    await this.removeLeftovers();
    // named and claimed before it exists, so no removal of leftovers running meanwhile can take it
    const scratch = path.join(this.root, `${SCRATCH_PREFIX}${randomBytes(6).toString("hex")}`);
    this.scratches.add(scratch);
    try {
      await mkdir(scratch);
      await this.npm(
        [
          "install",
          "--global",
          "--ignore-scripts",
          "--no-bin-links",
          "--no-audit",
          "--no-fund",
          "--no-update-notifier",
          "--prefix",
          path.join(scratch, "tree"),
          "--cache",
          path.join(scratch, "cache"),
          `${pkg}@${resolved.version}`,
        ],
        signal,
      );
      const bytes = await treeBytes(path.join(scratch, "tree"));
      if (bytes > this.config.maxTreeBytes)
        throw new AgentError(
          "bad_request",
          `${pkg}@${resolved.version} unpacks to ${mb(bytes)} MB, over this host's limit of ${mb(this.config.maxTreeBytes)} MB`,
        );
      const marker: Marker = { version: resolved.version, enginesNode: resolved.enginesNode, bytes };
      await writeFile(path.join(scratch, "tree", MARKER), JSON.stringify(marker));
      await rm(dir, { recursive: true, force: true });
      await rename(path.join(scratch, "tree"), dir);
      return marker;
    } finally {
      await rm(scratch, { recursive: true, force: true });
      this.scratches.delete(scratch);
    }
  }

  /** The scratch directories of fetches an earlier run of the agent did not finish (it was killed). */
  private async removeLeftovers(): Promise<void> {
    for (const name of await readdir(this.root).catch(() => [] as string[])) {
      const dir = path.join(this.root, name);
      if (name.startsWith(SCRATCH_PREFIX) && !this.scratches.has(dir))
        await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
    }
  }

  private retain(dir: string): void {
    this.inUse.set(dir, (this.inUse.get(dir) ?? 0) + 1);
  }

  private release(dir: string): void {
    const n = (this.inUse.get(dir) ?? 1) - 1;
    if (n > 0) this.inUse.set(dir, n);
    else this.inUse.delete(dir);
  }

  /** the cache directory of one package version: the name with its scope's `/` as `+` */
  private dirOf(pkg: string, version: string): string {
    return path.join(this.root, `${pkg.replace("/", "+")}@${version}`);
  }

  /** The registry's answer for `<package>@<spec>`: the exact version and its `engines.node`. */
  async resolve(
    pkg: string,
    spec: string,
    signal: AbortSignal,
  ): Promise<{ version: string; enginesNode: string | null }> {
    const out = await this.npm(["view", "--json", `${pkg}@${spec}`, "version", "engines"], signal);
    let parsed: unknown;
    try {
      parsed = JSON.parse(out || "null");
    } catch {
      throw new AgentError("internal", `npm view ${pkg}@${spec} answered something that is not JSON`);
    }
    // One version answers an object, or only the version's string when it has no `engines`; a spec
    // matching several would answer an array (never for an exact version or a dist-tag, but take
    // the last, npm's newest, if it does).
    const last = Array.isArray(parsed) ? parsed.at(-1) : parsed;
    const one = (typeof last === "string" ? { version: last } : last) as
      | { version?: unknown; engines?: { node?: unknown } }
      | null
      | undefined;
    const version = typeof one?.version === "string" ? one.version : undefined;
    if (!version) throw new AgentError("bad_request", `the npm registry has no version ${spec} of ${pkg}`);
    if (!isExactAgentVersion(version))
      throw new AgentError("internal", `the npm registry answered an unusable version for ${pkg}@${spec}`);
    const node = one?.engines?.node;
    return { version, enginesNode: typeof node === "string" ? node.slice(0, 200) : null };
  }

  /** npm with argv only, bounded in time and output; a failure carries npm's own reason. */
  private npm(args: string[], signal: AbortSignal): Promise<string> {
    const registry = this.config.registry ? ["--registry", this.config.registry] : [];
    const child = spawn(this.config.npm, [...args, ...registry], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...npmEnv(), NPM_CONFIG_UPDATE_NOTIFIER: "false", NPM_CONFIG_FUND: "false" },
      signal: AbortSignal.any([signal, AbortSignal.timeout(this.config.fetchTimeoutMs)]),
      killSignal: "SIGKILL",
    });
    const out = new CappedBytes(NPM_OUTPUT_MAX);
    const err = new CappedBytes(NPM_OUTPUT_MAX);
    child.stdout.on("data", out.push);
    child.stderr.on("data", err.push);
    return new Promise((resolve, reject) => {
      child.once("error", (e) => {
        const timedOut = (e as { name?: string }).name === "AbortError" && !signal.aborted;
        reject(
          timedOut
            ? new AgentError(
                "unavailable",
                `npm did not finish ${args[0]} within ${Math.round(this.config.fetchTimeoutMs / 1000)} s`,
              )
            : new AgentError("internal", `npm could not run: ${e.message}`),
        );
      });
      child.once("close", (code) => {
        if (code === 0) return resolve(out.text());
        reject(npmFailure(args[0] ?? "npm", out.text(), err.text()));
      });
    });
  }

  /**
   * Least recently used trees go while the cache is over its size (never one in use: checked under
   * the tree's own lock, which a prepare holds until it has retained it). Scratch directories a
   * killed agent left behind go too.
   */
  private async evict(): Promise<void> {
    await this.removeLeftovers();
    const entries: { dir: string; bytes: number; used: number }[] = [];
    for (const name of await readdir(this.root).catch(() => [] as string[])) {
      if (name.startsWith(".")) continue;
      const dir = path.join(this.root, name);
      const used = await stat(path.join(dir, MARKER)).then(
        (st) => st.mtimeMs,
        () => 0,
      );
      entries.push({ dir, bytes: (await readMarker(dir))?.bytes ?? 0, used });
    }
    let total = entries.reduce((sum, e) => sum + e.bytes, 0);
    for (const e of entries.sort((a, b) => a.used - b.used)) {
      if (total <= this.config.maxCacheBytes) break;
      const gone = await this.locks.run(e.dir, async () => {
        if (this.inUse.has(e.dir)) return false;
        await rm(e.dir, { recursive: true, force: true });
        return true;
      });
      if (gone) total -= e.bytes;
    }
  }
}

/** A fetch failed because the host cache is full (npm's ENOSPC/EDQUOT, or the agent's own write). */
function hostCacheFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === "EDQUOT" || code === "ENOSPC") return true;
  return (
    err instanceof AgentError &&
    /\b(EDQUOT|ENOSPC)\b|Disk quota exceeded|No space left on device/.test(err.message)
  );
}

/** At most `max` at once; the rest wait their turn. */
class Limiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

async function readMarker(dir: string): Promise<Marker | null> {
  try {
    const m = JSON.parse(await readFile(path.join(dir, MARKER), "utf8")) as Partial<Marker>;
    return typeof m.version === "string" && typeof m.bytes === "number"
      ? { version: m.version, bytes: m.bytes, enginesNode: m.enginesNode ?? null }
      : null;
  } catch {
    return null;
  }
}

/** Bytes of every regular file under `dir` (no links followed). */
async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

/**
 * The agent's environment without its own settings (the host token among them): npm needs the
 * operator's npm configuration (registry, proxy, CA), never the agent's.
 */
export function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("PODHOST_")));
}

const mb = (bytes: number) => Math.ceil(bytes / (1024 * 1024));

/**
 * npm's reason in one line: the `{error: {code, summary}}` that `--json` prints, else its
 * `npm error` lines (without the log-file note). A missing package or version (E404, ETARGET) is
 * the caller's to fix (`bad_request`); anything else is the host's (`unavailable`: try again).
 */
export function npmFailure(what: string, stdout: string, stderr: string): AgentError {
  let code = "";
  let reason = "";
  try {
    const e = (JSON.parse(stdout) as { error?: { code?: unknown; summary?: unknown } }).error;
    if (typeof e?.summary === "string") reason = e.summary;
    if (typeof e?.code === "string") code = e.code;
  } catch {
    // not JSON: npm's lines below
  }
  if (!reason) {
    const lines = stderr
      .split("\n")
      .filter((l) => l.startsWith("npm error ") || l.startsWith("npm ERR! "))
      .map((l) => l.slice(10).trim())
      .filter((l) => l && !l.startsWith("A complete log of this run"));
    const codeLine = lines.find((l) => l.startsWith("code "));
    if (codeLine) code = codeLine.slice(5);
    reason = lines
      .filter((l) => !l.startsWith("code "))
      .slice(0, 2)
      .join("; ");
  }
  reason = (reason || stderr.trim().split("\n").at(-1) || "no output").slice(0, 400);
  const notFound = ["E404", "ETARGET"].includes(code);
  return new AgentError(
    notFound ? "bad_request" : "unavailable",
    `npm ${what} failed: ${code ? `${code} ` : ""}${reason}`,
  );
}
