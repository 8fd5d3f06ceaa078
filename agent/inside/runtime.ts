import type { NODE_VERSIONS } from "../../shared/catalog";
import { START_FILES } from "../../shared/start-files";
import type { DockerClient } from "../docker/client";
import { HOME, podNames } from "../docker/naming";
import { SH, TIMEOUT } from "../docker/pod-bin";
import { runAsPodUser } from "../docker/pod-user";
import { inspectContainer } from "../docker/resources";
import { restartServices } from "../docker/runit";
import { AgentError } from "../errors";
import type { Logger } from "../logger";

/**
 * Small read-outs of a pod and the Node version switch, each one fixed script run as pod_user
 * (runAsPodUser: in the container when it runs, else in a throwaway helper on the home volume),
 * under the agent's fixed PATH (../docker/pod-bin.ts): the runtimes are asked by absolute path.
 */

// The start command mirrors images/{nodejs,python}/lib/run-app: first match wins.
const PRESET = `H=${HOME}; cd "$H/app" 2>/dev/null || true
ver= start=
if [ -s "$H/.pod/start" ]; then custom=$(head -c 500 "$H/.pod/start" | tr '\\n' ' ' | sed 's/ *$//'); fi
case "$1" in
nodejs)
  m=$(/opt/podhost/bin/pod-node-version); node=/opt/node/$m/bin/node
  ver=$("$node" --version 2>/dev/null | sed 's/^v//')
  if [ -n "\${custom:-}" ]; then start=$custom
  elif [ -f package.json ] && "$node" -e 'process.exit(require("./package.json").scripts?.start ? 0 : 1)' 2>/dev/null; then start="npm start"
  else for f in ${START_FILES.nodejs.join(" ")}; do [ -f "$f" ] && { start="node $f"; break; }; done; fi ;;
python)
  py=python3; [ -x .venv/bin/python ] && py=.venv/bin/python
  ver=$("$py" --version 2>&1 | sed -n 's/^Python //p')
  if [ -n "\${custom:-}" ]; then start=$custom
  else for f in ${START_FILES.python.join(" ")}; do [ -f "$f" ] && { start="python $f"; break; }; done; fi ;;
static)
  ver=$(/usr/sbin/nginx -v 2>&1 | sed -n 's|.*nginx/||p'); start=nginx ;;
php)
  ver=$(php -r 'echo PHP_VERSION;' 2>/dev/null); start="nginx + php-fpm" ;;
esac
printf '%s\\n%s\\n' "$ver" "$start"`;

export async function probePreset(
  docker: DockerClient,
  prefix: string,
  pod: string,
  preset: string,
): Promise<{ runtimeVersion: string | null; startCommand: string | null }> {
  const r = await runAsPodUser(docker, prefix, pod, [TIMEOUT, "10", SH, "-c", PRESET, "sh", preset]);
  if (r.exitCode !== 0) return { runtimeVersion: null, startCommand: null };
  const [version = "", start = ""] = r.stdout.split("\n");
  return { runtimeVersion: version.trim() || null, startCommand: start.trim() || null };
}

// Bytes on disk (-B1, not apparent size: that is what fills the plan's disk), one file system (-x).
// The total is its own `du`: one du over `.` and its children would count each child only once.
// -0: names end with NUL, so a file name holding a newline cannot break the parse.
const DISK = `cd ${HOME} || exit 1
du -0 -s -B1 -x -- .
find . -mindepth 1 -maxdepth 1 -print0 | xargs -0 -r du -0 -s -B1 -x --
exit 0`;

/** a home with thousands of top-level entries lists its largest */
const MAX_DISK_PATHS = 200;
/** du's records kept (~16,000 entries of long names); entries past it are not counted */
const DISK_OUTPUT_BYTES = 4 * 1024 * 1024;

/**
 * Largest first, equal sizes by path in code-unit order. Not `localeCompare`: its first call in a
 * process loads ICU's collation data, ~3 MB of the agent's RSS from the first `pod.disk` on.
 */
export function largestFirst(a: { path: string; bytes: number }, b: { path: string; bytes: number }): number {
  return b.bytes - a.bytes || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

export async function diskUsage(
  docker: DockerClient,
  prefix: string,
  pod: string,
): Promise<{ usedBytes: number; paths: { path: string; bytes: number }[] }> {
  const r = await runAsPodUser(docker, prefix, pod, [TIMEOUT, "50", SH, "-c", DISK], {
    timeoutMs: 60_000,
    maxOutputBytes: DISK_OUTPUT_BYTES,
  });
  if (r.exitCode === 124) throw new AgentError("unavailable", `measuring ${HOME} of pod ${pod} timed out`);
  let usedBytes = 0;
  const paths: { path: string; bytes: number }[] = [];
  // Every record ends with NUL: what follows the last one is nothing, or a record the cap cut.
  const records = r.stdout.split("\0");
  records.pop();
  for (const record of records) {
    const tab = record.indexOf("\t");
    if (tab < 0) continue;
    const bytes = Number(record.slice(0, tab));
    const name = record.slice(tab + 1);
    if (!Number.isSafeInteger(bytes)) continue;
    if (name === ".") usedBytes = bytes;
    else paths.push({ path: `${HOME}/${name.replace(/^\.\//, "")}`, bytes });
  }
  if (r.exitCode !== 0 && paths.length === 0) {
    throw new AgentError(
      "internal",
      `measuring ${HOME} of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
  paths.sort(largestFirst);
  return { usedBytes, paths: paths.slice(0, MAX_DISK_PATHS) };
}

// pod-node-version prints the major the shims use now (20 when the file is absent or unknown).
const NODE_SWITCH = `cur=$(/opt/podhost/bin/pod-node-version)
if [ "$cur" = "$1" ]; then echo "same $cur"; exit 0; fi
set -eu
mkdir -p ${HOME}/.pod
t=$(mktemp ${HOME}/.pod/.node-version.XXXXXX)
trap 'rm -f "$t"' EXIT
printf '%s\\n' "$1" >"$t"
mv -f "$t" ${HOME}/.pod/node-version
trap - EXIT
echo "changed $cur"`;

export async function switchNodeVersion(
  docker: DockerClient,
  prefix: string,
  pod: string,
  version: (typeof NODE_VERSIONS)[number],
): Promise<{ previous: string; changed: boolean }> {
  const r = await runAsPodUser(docker, prefix, pod, [SH, "-c", NODE_SWITCH, "sh", version]);
  const m = /^(same|changed) (\S+)/.exec(r.stdout.trim());
  if (r.exitCode !== 0 || !m) {
    throw new AgentError(
      "internal",
      `switching Node.js of pod ${pod} failed: ${r.stderr.trim().slice(0, 300)}`,
    );
  }
  return { previous: m[2] ?? "", changed: m[1] === "changed" };
}

/**
 * Restart the app service when the container runs (a stopped pod picks the change up when it starts).
 * Returns whether a restart was issued; a service that then fails to come up is the app's problem,
 * visible in its log, and not a failure of the change that was already written.
 */
export async function restartAppService(
  docker: DockerClient,
  prefix: string,
  pod: string,
  log: Logger,
): Promise<boolean> {
  const name = podNames(prefix, pod).container;
  const info = await inspectContainer(docker, name);
  if (!info?.State.Running) return false;
  const unconfirmed = await restartServices(docker, name, ["app"]);
  if (unconfirmed.length > 0) log.warn("app restart did not confirm", { pod });
  return true;
}
