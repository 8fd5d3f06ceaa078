import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { HOME } from "../docker/naming";
import { SH } from "../docker/pod-bin";
import { RUNIT_FNS } from "../docker/runit";
import { AgentError } from "../errors";

/**
 * Releases in the pod's home: `~/releases/<deployment id>/` holds a commit's files, its installed
 * dependencies and its build output; `~/app` is a relative symlink to the serving one, replaced
 * atomically (a new link renamed over it). The pod's `.env` is copied into a release when it starts
 * serving, so the env API (which writes `~/app/.env`) keeps working through deploys and rollbacks.
 * A pod's first deploy keeps the directory `~/app` was as `~/releases/initial` (never deleted).
 *
 * Every script is fixed text run as pod_user in the deploy's build container (./build.ts) under
 * the agent's PATH, with the deployment ids as positional arguments (ids are checked to be plain
 * names first): nothing the repository holds reaches a shell string, and every file operation
 * resolves inside the container, so links in the tree only ever point at the pod's own files.
 */

export const RELEASES = `${HOME}/releases`;
/** a release directory name: the Worker's deployment ids, or `initial` */
const RELEASE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function checkReleaseId(id: string): string {
  if (!RELEASE_ID.test(id) || id === "initial" || id.startsWith("initial-"))
    throw new AgentError("bad_request", `invalid deployment id ${JSON.stringify(id)}`);
  return id;
}

export const PRELUDE = `set -u
H=${HOME}; R="$H/releases"
umask 022
wipe() { chmod -R u+rwx "$1" 2>/dev/null; rm -rf "$1"; }
copy_env() { # the serving app's .env into release dir $1 (not when it is that release)
  if { [ -e "$H/app/.env" ] || [ -L "$H/app/.env" ]; } && [ "$(readlink -f "$H/app")" != "$(readlink -f "$1")" ]; then
    rm -rf "$1/.env.podhost" && cp -a "$H/app/.env" "$1/.env.podhost" && rm -rf "$1/.env" && mv -T "$1/.env.podhost" "$1/.env"
  fi
}
`;

// $1 id, $2 the web root inside it ("" the release itself). Points ~/app at it (a pod's first ~/app
// directory is kept as a release).
const SWITCH = `${PRELUDE}
id=$1; d="$R/$id"; t=$d; [ -n "$2" ] && t="$d/$2"
[ -d "$d" ] || { echo "release $id is not on this pod" >&2; exit 3; }
[ -d "$t" ] && [ ! -L "$t" ] || { echo "$2 is not a directory of release $id" >&2; exit 3; }
mkdir -p "$H/.pod" || exit 70
copy_env "$t" || exit 73
if [ -d "$H/app" ] && [ ! -L "$H/app" ]; then
  keep="$R/initial"; [ -e "$keep" ] && keep="$R/initial-$(date +%s)"
  mv -T "$H/app" "$keep" || exit 74
fi
rm -f "$H/.pod/app.next"
ln -s "releases/$id\${2:+/$2}" "$H/.pod/app.next" || exit 74
mv -T -f "$H/.pod/app.next" "$H/app" || exit 74
echo switched`;

// $@ the releases to keep. Everything else in ~/releases goes, except initial* and what ~/app points at.
const PRUNE = `${PRELUDE}
cur=$(readlink "$H/app" 2>/dev/null || true); cur=\${cur#releases/}; cur=\${cur%%/*}
for p in "$R"/*; do
  [ -d "$p" ] && [ ! -L "$p" ] || continue
  n=\${p##*/}
  case "$n" in initial|initial-*) continue ;; esac
  [ "$n" = "$cur" ] && continue
  k=; for x in "$@"; do [ "$x" = "$n" ] && k=1; done
  [ -n "$k" ] || wipe "$p"
done
exit 0`;

// $1 the byte count of stdin: appended to ~/logs/build.log (head -c: never waits on a lost EOF).
const APPEND_LOG = `mkdir -p ${HOME}/logs && /usr/bin/head -c "$1" >>${HOME}/logs/build.log`;

// $1 id: the release's directory exists.
const EXISTS = `[ -d "${RELEASES}/$1" ] && [ ! -L "${RELEASES}/$1" ]`;

/** which release ~/app points at ("" when it is a directory or missing) */
const CURRENT = `l=$(readlink ${HOME}/app 2>/dev/null) || exit 0; l=\${l#releases/}; echo "\${l%%/*}"`;

const fail = (what: string, r: { exitCode: number; stderr: string; stdout?: string }) =>
  new AgentError(
    "internal",
    `${what} failed (exit ${r.exitCode}): ${(r.stderr || r.stdout || "").trim().slice(0, 300)}`,
  );

/** Point ~/app at the release (atomic rename of a new symlink); the .env comes along. */
export async function switchRelease(
  docker: DockerClient,
  box: string,
  id: string,
  webRoot: string | null = null,
): Promise<void> {
  const r = await execInContainer(docker, box, [SH, "-c", SWITCH, "sh", id, webRoot ?? ""], {
    workingDir: HOME,
    signal: AbortSignal.timeout(60_000),
    maxOutputBytes: 16 * 1024,
  });
  if (r.exitCode !== 0 || !r.stdout.includes("switched")) throw fail("switching ~/app", r);
}

/**
 * Point ~/app at the release and restart the pod's `app` service on it, in one exec in the pod's
 * container (on a deploy's path: the old app stops as soon as the new release may serve).
 */
export async function switchAndRestart(docker: DockerClient, container: string, id: string): Promise<void> {
  const r = await execInContainer(
    docker,
    container,
    [SH, "-c", `${SWITCH}\n${RUNIT_FNS}\nsv_restart app`, "sh", id, ""],
    { workingDir: HOME, signal: AbortSignal.timeout(60_000), maxOutputBytes: 16 * 1024 },
  );
  if (r.exitCode !== 0 || !r.stdout.includes("switched")) throw fail("switching ~/app", r);
  // a restart that did not confirm is the app's problem: the caller waits for its port
}

export async function pruneReleases(docker: DockerClient, box: string, keep: string[]): Promise<void> {
  const r = await execInContainer(docker, box, [SH, "-c", PRUNE, "sh", ...keep], {
    workingDir: HOME,
    signal: AbortSignal.timeout(300_000),
    maxOutputBytes: 16 * 1024,
  });
  if (r.exitCode !== 0) throw fail("pruning old releases", r);
}

export async function releaseExists(docker: DockerClient, box: string, id: string): Promise<boolean> {
  const r = await execInContainer(docker, box, [SH, "-c", EXISTS, "sh", id], {
    signal: AbortSignal.timeout(30_000),
  });
  return r.exitCode === 0;
}

export async function currentRelease(docker: DockerClient, box: string): Promise<string | null> {
  const r = await execInContainer(docker, box, [SH, "-c", CURRENT], { signal: AbortSignal.timeout(30_000) });
  const id = r.stdout.trim();
  return id && RELEASE_ID.test(id) ? id : null;
}

/** Append the (capped, redacted) build log to ~/logs/build.log. */
export async function appendBuildLog(docker: DockerClient, box: string, text: string): Promise<void> {
  const bytes = Buffer.from(text);
  if (bytes.length === 0) return;
  await execInContainer(docker, box, [SH, "-c", APPEND_LOG, "sh", String(bytes.length)], {
    stdin: bytes,
    signal: AbortSignal.timeout(30_000),
  });
}

// $1 id: a release that never served goes again.
const DISCARD = `${PRELUDE}
cur=$(readlink "$H/app" 2>/dev/null || true)
case "$cur" in "releases/$1"|"releases/$1/"*) exit 0 ;; esac
[ -d "$R/$1" ] && [ ! -L "$R/$1" ] && wipe "$R/$1"
exit 0`;

export async function discardRelease(docker: DockerClient, box: string, id: string): Promise<void> {
  await execInContainer(docker, box, [SH, "-c", DISCARD, "sh", id], { signal: AbortSignal.timeout(300_000) });
}

/** whether the pod has a start command of its own (`~/.pod/start`), which wins over detection */
export async function hasStartOverride(docker: DockerClient, box: string): Promise<boolean> {
  const r = await execInContainer(docker, box, [SH, "-c", `[ -s ${HOME}/.pod/start ]`], {
    signal: AbortSignal.timeout(30_000),
  });
  return r.exitCode === 0;
}

/** where static site generators put their output; a static pod's build serves the first that has an index.html */
export const WEB_ROOTS = ["dist", "build", "out"] as const;

// $1 id: the first of WEB_ROOTS (a real directory) holding an index.html.
const WEB_ROOT = `for w in ${WEB_ROOTS.join(" ")}; do
  [ -d "${RELEASES}/$1/$w" ] && [ ! -L "${RELEASES}/$1/$w" ] && [ -f "${RELEASES}/$1/$w/index.html" ] && { echo "$w"; exit 0; }
done
exit 0`;

/** A static pod's build output directory in the release, or null: serve the release itself. */
export async function findWebRoot(docker: DockerClient, box: string, id: string): Promise<string | null> {
  const r = await execInContainer(docker, box, [SH, "-c", WEB_ROOT, "sh", id], {
    signal: AbortSignal.timeout(30_000),
    maxOutputBytes: 1024,
  });
  const found = r.stdout.trim();
  return WEB_ROOTS.find((w) => w === found) ?? null;
}
