import { spawn } from "node:child_process";
import { access, mkdir, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { RepoSource } from "../../shared/protocol/git";
import { CappedBytes } from "../docker/capped";
import { AgentError } from "../errors";
import { DeployFailure } from "./failure";
import { basicAuthValue, Redactor } from "./redact";
import { repoTarget } from "./target";

/**
 * `git` on the host, for the one thing that needs the token: talking to the git host. Argv arrays
 * only; the token rides in git's environment (GIT_CONFIG_COUNT → `http.extraHeader`) for that one
 * command and is never in argv, a file, a log line or a pod. Each command runs with no system or
 * global config, no hooks, no submodules, no terminal prompt, no redirects, only https to a public
 * host whose addresses were checked and pinned (./target.ts; http to a loopback host only with
 * PODHOST_ALLOW_HTTP_GIT_LOOPBACK, local development and tests), a wall-clock timeout and capped
 * output; the bytes a fetch writes are watched and the fetch is stopped past the cap
 * (`repo_too_large`). What a failure says to the caller is a fixed sentence per class, never git's
 * own words (which would tell an open port from a closed one, or quote an internal service).
 */

export interface GitLimits {
  timeoutMs: number;
  maxFetchBytes: number;
  /** plain http:// to a loopback host is allowed (PODHOST_ALLOW_HTTP_GIT_LOOPBACK) */
  allowHttpLoopback: boolean;
}

export const MAX_STDERR = 64 * 1024;
const MAX_MESSAGE = 4096;

/** A branch name git accepts as `refs/heads/<name>` that cannot turn a refspec into something else. */
export function checkBranch(branch: string): string {
  const bad =
    branch.startsWith("-") ||
    branch.startsWith("/") ||
    branch.endsWith("/") ||
    branch.endsWith(".") ||
    branch.endsWith(".lock") ||
    branch.includes("..") ||
    branch.includes("//") ||
    branch.includes("@{") ||
    [...branch].some((c) => c.charCodeAt(0) < 0x21 || c.charCodeAt(0) === 0x7f || " ~^:?*[\\".includes(c));
  if (bad) throw new DeployFailure("branch_not_found", `invalid branch name ${JSON.stringify(branch)}`);
  return branch;
}

/**
 * git's environment: nothing of the host's own git config, the token as an extra header, no
 * redirects, and the remote's host pinned to the addresses ./target.ts checked (`pin`).
 */
export function gitEnv(
  source: Pick<RepoSource, "token">,
  loopbackHttp: boolean,
  home: string,
  pin: string | null = null,
) {
  const config: [string, string][] = [
    ["protocol.allow", "never"],
    ["protocol.https.allow", "always"],
    // A redirect could lead anywhere, the host's loopback included (and the token with it).
    ["http.followRedirects", "false"],
    ["core.hooksPath", "/dev/null"],
    ["core.fsmonitor", "false"],
    ["submodule.recurse", "false"],
    ["fetch.recurseSubmodules", "false"],
    // Objects are checked as they arrive (a malformed object is refused), but the harmless quirks of
    // old repositories are not reasons to refuse a deploy.
    ["fetch.fsckObjects", "true"],
    ["fetch.fsck.zeroPaddedFilemode", "ignore"],
    ["fetch.fsck.badTimezone", "ignore"],
    ["fetch.fsck.missingEmail", "ignore"],
    // The cache keeps only what its one ref needs once git finds it worth a clean-up.
    ["gc.pruneExpire", "now"],
    ["credential.helper", ""],
    ["http.lowSpeedLimit", "1000"],
    ["http.lowSpeedTime", "60"],
  ];
  if (loopbackHttp) config.push(["protocol.http.allow", "always"]);
  if (pin) config.push(["http.curloptResolve", pin]);
  if (source.token) config.push(["http.extraHeader", `Authorization: Basic ${basicAuthValue(source.token)}`]);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "/bin/false",
    SSH_ASKPASS: "/bin/false",
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

export interface GitRun {
  code: number | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
  tooLarge: boolean;
}

/** One git command: argv, the given environment, a timeout, capped output, an optional size watch. */
export async function runGit(
  args: string[],
  env: Record<string, string>,
  opts: {
    timeoutMs: number;
    signal?: AbortSignal;
    maxStdout?: number;
    watch?: { dir: string; maxBytes: number };
    /** written to git's stdin, which is then closed */
    stdin?: string;
  },
): Promise<GitRun> {
  const watch = opts.watch;
  const baseline = watch ? await dirBytes(watch.dir) : 0;
  const run = await new Promise<GitRun>((resolve, reject) => {
    const child = spawn("git", args, { env, stdio: ["pipe", "pipe", "pipe"] });
    // git's stdin: what the command reads (cat-file --batch), else closed at once
    child.stdin.on("error", () => undefined);
    child.stdin.end(opts.stdin ?? "");
    const out = new CappedBytes(opts.maxStdout ?? 1024 * 1024);
    const err = new CappedBytes(MAX_STDERR);
    child.stdout.on("data", out.push);
    child.stderr.on("data", err.push);
    let timedOut = false;
    let tooLarge = false;
    const kill = () => child.kill("SIGKILL");
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => {
      timedOut = true;
      kill();
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let watcher: NodeJS.Timeout | undefined;
    if (watch) {
      let busy = false;
      const check = async () => {
        if (busy) return;
        busy = true;
        const size = await dirBytes(watch.dir);
        busy = false;
        if (size - baseline > watch.maxBytes) {
          tooLarge = true;
          kill();
        }
      };
      watcher = setInterval(() => void check(), 200);
    }
    child.once("error", (e) => {
      clearTimeout(timer);
      clearInterval(watcher);
      reject(e);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      clearInterval(watcher);
      opts.signal?.removeEventListener("abort", onAbort);
      resolve({ code, stdout: out.bytes(), stderr: err.text(), timedOut, tooLarge });
    });
  });
  // A fast fetch ends between two checks: what it wrote is counted once more at the end.
  if (watch && !run.tooLarge && (await dirBytes(watch.dir)) - baseline > watch.maxBytes) run.tooLarge = true;
  return run;
}

/** Bytes of the files under `dir` (a repository's objects; missing parts count 0). */
async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await dirBytes(p);
    else
      total += await stat(p).then(
        (s) => s.size,
        () => 0,
      );
  }
  return total;
}

/**
 * What git's failure means for the user, as a fixed sentence per class: git's own words (which
 * would tell an open port from a closed one, or quote what an internal service answered) never
 * reach the caller. `branch` names the branch asked for, when there is one.
 */
export function classifyGitFailure(run: GitRun, limits: GitLimits, branch?: string): DeployFailure {
  if (run.tooLarge)
    return new DeployFailure(
      "repo_too_large",
      `the fetch exceeded ${Math.round(limits.maxFetchBytes / 1024 / 1024)} MiB and was stopped`,
    );
  if (run.timedOut)
    return new DeployFailure("timeout", `git did not finish within ${Math.round(limits.timeoutMs / 1000)} s`);
  const has = (s: string) => run.stderr.includes(s);
  if (has("Disk quota exceeded")) return new DeployFailure("repo_too_large", HOST_CACHE_FULL);
  // the device the cache is on (the host's pods' disk) is full, not the cache's own limit
  if (has("No space left on device")) return new DeployFailure("unknown", HOST_DISK_FULL, "conflict");
  if (has("couldn't find remote ref"))
    return new DeployFailure(
      "branch_not_found",
      branch ? `the repository has no branch ${branch}` : "the repository has no such branch",
    );
  if (
    has("Authentication failed") ||
    has("returned error: 401") ||
    has("returned error: 403") ||
    has("could not read Username") ||
    has("could not read Password") ||
    has("terminal prompts disabled") ||
    has("Access denied")
  )
    return new DeployFailure(
      "auth",
      "the repository refused access: check auth_token (a token that may read the repository)",
    );
  if (has("returned error: 30") || has("redirect"))
    return new DeployFailure(
      "repo_unreachable",
      "the repository's URL answered with a redirect, which is not followed: give the repository's own https:// URL",
    );
  return new DeployFailure("repo_unreachable", UNREACHABLE);
}

export const UNREACHABLE = "the repository could not be reached, or it is not a Git repository";
export const HOST_CACHE_FULL =
  "the host's space for fetched repositories is full (its own disk limit): the fetch was stopped and removed; try again later";
export const HOST_DISK_FULL =
  "the host's disk is full (no space left on device): the fetch was stopped and removed; try again later";

/** `git ls-remote --symref`: the branches and where HEAD points. */
export async function listBranches(
  source: Omit<RepoSource, "branch">,
  limits: GitLimits,
  home: string,
  signal?: AbortSignal,
): Promise<{ branches: string[]; default_branch: string | null }> {
  const { url, loopbackHttp, pin } = await repoTarget(source.url, limits.allowHttpLoopback);
  const run = await runGit(
    ["ls-remote", "--symref", url, "HEAD", "refs/heads/*"],
    gitEnv(source, loopbackHttp, home, pin),
    { timeoutMs: limits.timeoutMs, signal, maxStdout: 4 * 1024 * 1024 },
  );
  if (run.code !== 0) throw classifyGitFailure(run, limits);
  const branches: string[] = [];
  let defaultBranch: string | null = null;
  for (const line of run.stdout.toString("utf8").split("\n")) {
    const tab = line.indexOf("\t");
    if (tab < 0) continue;
    const left = line.slice(0, tab);
    const ref = line.slice(tab + 1).trim();
    if (left.startsWith("ref: ") && ref === "HEAD") {
      const target = left.slice(5).trim();
      if (target.startsWith("refs/heads/")) defaultBranch = target.slice(11);
    } else if (ref.startsWith("refs/heads/") && branches.length < 1000) {
      branches.push(ref.slice(11));
    }
  }
  return { branches: branches.sort(), default_branch: defaultBranch };
}

export interface FetchedCommit {
  sha: string;
  message: string;
}

/** The ref a deploy's fetch writes in the pod's repository cache. */
export const DEPLOY_REF = "refs/deploy/head";

/**
 * `git fetch --depth=1` of the branch into a bare repository (created when missing): the pod's
 * cache, or a temporary one for an inspection. Returns the commit.
 */
export async function fetchBranch(
  source: RepoSource,
  repoDir: string,
  limits: GitLimits,
  home: string,
  signal?: AbortSignal,
): Promise<FetchedCommit> {
  const { url, loopbackHttp, pin } = await repoTarget(source.url, limits.allowHttpLoopback);
  const branch = checkBranch(source.branch);
  const redactor = new Redactor(source.token);
  const env = gitEnv(source, loopbackHttp, home, pin);
  const local = { timeoutMs: 30_000, signal };
  if (!(await exists(join(repoDir, "HEAD")))) {
    await mkdir(repoDir, { recursive: true, mode: 0o700 });
    const init = await runGit(["init", "--bare", "--quiet", repoDir], env, local);
    if (init.code !== 0)
      throw new AgentError("internal", `git init failed: ${init.stderr.trim().slice(0, 300)}`);
  }
  const run = await runGit(
    [
      "-C",
      repoDir,
      "fetch",
      "--depth=1",
      "--no-tags",
      "--no-recurse-submodules",
      "--no-write-fetch-head",
      url,
      `+refs/heads/${branch}:${DEPLOY_REF}`,
    ],
    env,
    {
      timeoutMs: limits.timeoutMs,
      signal,
      watch: { dir: join(repoDir, "objects"), maxBytes: limits.maxFetchBytes },
    },
  );
  if (run.code !== 0 || run.tooLarge) {
    const failure = classifyGitFailure(run, limits, branch);
    // What a refused fetch wrote must not stay: the cache is only a cache.
    if (failure.cls === "repo_too_large") await rm(repoDir, { recursive: true, force: true });
    throw failure;
  }
  const show = await runGit(["-C", repoDir, "log", "-1", "--format=%H%n%B", DEPLOY_REF], env, {
    ...local,
    maxStdout: MAX_MESSAGE + 64,
  });
  const text = show.stdout.toString("utf8");
  const sha = text.slice(0, 40);
  if (show.code !== 0 || !/^[0-9a-f]{40}$/.test(sha))
    throw new AgentError(
      "internal",
      `reading the fetched commit failed: ${show.stderr.trim().slice(0, 300)}`,
    );
  return { sha, message: redactor.redact(text.slice(41).trim()).slice(0, MAX_MESSAGE) };
}

/**
 * Old commits' objects pile up in a pod's cache: git decides when a clean-up is due (cheap when
 * not). Run after a deploy, off its path; the pod's next deploy waits for it.
 */
export async function tidyRepo(repoDir: string, home: string, timeoutMs: number): Promise<void> {
  await runGit(["-C", repoDir, "gc", "--auto", "--quiet"], gitEnv({}, false, home), { timeoutMs });
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );
