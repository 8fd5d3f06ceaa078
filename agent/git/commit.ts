import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import type { DetectedCommands, RepoSource } from "../../shared/protocol/git";
import type { AgentConfig } from "../config";
import { type MakeRoom, withRoom } from "../disk/host-cache";
import { DEPENDENCY_FILES, DETECT_FILES, type DetectFile, detectCommands } from "./detect";
import { DeployFailure } from "./failure";
import { fetchBranch, type GitLimits, HOST_CACHE_FULL, HOST_DISK_FULL } from "./fetch";
import { treeReader } from "./tree";

/**
 * What a fetched commit says: its root files read once (detection and the dependency key), and
 * `repo.inspect`, which fetches into a temporary repository only to detect.
 */

type Preset = DetectedCommands["preset"];

export const limitsOf = (config: AgentConfig): GitLimits => ({
  timeoutMs: config.git.fetchTimeoutMs,
  maxFetchBytes: config.git.maxFetchBytes,
  allowHttpLoopback: config.git.allowHttpLoopback,
});

/** git's HOME: an empty directory of the agent's (no user config is ever read) */
export async function gitHome(config: AgentConfig): Promise<string> {
  const home = join(config.stateDir, "git", ".home");
  await mkdir(home, { recursive: true, mode: 0o700 });
  return home;
}

/** what detection reads of a root file at most (a larger one is as good as absent) */
const DETECT_MAX = 256 * 1024;
/** what the dependency key reads of a dependency file at most (lockfiles grow large) */
const DEPENDENCY_MAX = 16 * 1024 * 1024;

/** Read what detection (and, with a preset, the dependency key) needs from the commit, and detect. */
export async function detectIn(
  repoDir: string,
  sha: string,
  home: string,
  preset?: Preset,
  buildCommand?: string | null,
) {
  const wanted = new Map<string, number>(DETECT_FILES.map((f) => [f, DETECT_MAX]));
  for (const f of preset ? DEPENDENCY_FILES[preset] : []) wanted.set(f, DEPENDENCY_MAX);
  const tree = await treeReader(repoDir, sha, home, wanted);
  const text: Partial<Record<DetectFile, string | null>> = {};
  for (const f of DETECT_FILES) {
    const t = tree.read(f);
    text[f] = t !== null && t.length <= DETECT_MAX ? t : null;
  }
  const detected = detectCommands({ names: tree.names, text }, { preset, buildCommand });
  return { detected, tree, text };
}

/**
 * A fetch failed because the host cache is full, or the disk it is on (not because the repository
 * passed the per-fetch cap): room made in the cache may let it through.
 */
export const hostCacheFull = (err: unknown) =>
  err instanceof DeployFailure && (err.message === HOST_CACHE_FULL || err.message === HOST_DISK_FULL);

/**
 * `repo.inspect`: a shallow fetch into a temporary repository, detection, the repository removed.
 * A full host cache: room made (`room`, agent/disk/host-cache.ts) and the fetch tried once more.
 */
export async function inspectRepo(
  config: AgentConfig,
  source: RepoSource,
  signal?: AbortSignal,
  room?: MakeRoom,
) {
  const home = await gitHome(config);
  await mkdir(join(config.cacheDir, "git"), { recursive: true, mode: 0o700 });
  const tmp = await mkdtemp(join(config.cacheDir, "git", "inspect-"));
  try {
    const commit = await withRoom(
      () => fetchBranch(source, join(tmp, "repo.git"), limitsOf(config), home, signal),
      hostCacheFull,
      room && (() => room()),
    );
    return (await detectIn(join(tmp, "repo.git"), commit.sha, home)).detected;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** sha256 of the preset, the install command and the dependency files; null: never reuse. */
export function dependencyKey(
  read: (name: string) => string | null,
  preset: Preset,
  detected: DetectedCommands,
): string | null {
  if (!detected.install_command) return null;
  // `pip install .` installs the project itself: its venv is never the same twice
  if (preset === "python" && !detected.install_command.includes("-r requirements.txt")) return null;
  const h = createHash("sha256").update(`${preset}\0${detected.install_command}\0`);
  for (const f of DEPENDENCY_FILES[preset]) {
    const text = read(f);
    h.update(`${f}\0${text === null ? "-" : text.length}\0${text ?? ""}\0`);
  }
  return h.digest("hex");
}
