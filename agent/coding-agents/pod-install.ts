import { spawn } from "node:child_process";
import path from "node:path";
import type { CodingAgent } from "../../shared/coding-agents";
import { sayWhyTarFailed } from "../disk/full";
import { CappedBytes } from "../docker/capped";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { SH, TIMEOUT } from "../docker/pod-bin";
import { AgentError } from "../errors";
import type { PreparedTree } from "./host-cache";

/**
 * A coding agent put into a pod (docs/coding-agents.md), every step a fixed script run as pod_user
 * in the pod's container with its inputs as positional arguments (the package name and command
 * come from the catalog, never from a tenant):
 *
 * 1. which Node: the pod's own (`~/.pod/node-version`) in a Node.js pod whose major is new enough;
 *    otherwise (another runtime, or an older major) the lowest major the image carries under
 *    /opt/node that is at least the agent's minimum and the images' default, and the command is
 *    then *pinned* to it;
 * 2. the host's prepared tree streamed in (`tar -x` as pod_user: the pod's disk quota applies) and
 *    moved into `~/.npm-global/lib/node_modules/<package>` in place of an earlier copy;
 * 3. `npm rebuild --global <package>` with that Node's own npm, offline, with no user or global
 *    npmrc and a throwaway cache in /tmp: the package's own install scripts run (Claude Code and
 *    opencode copy their platform binary into place) and npm links its command into
 *    `~/.npm-global/bin`. Its dependencies' scripts do not run (their platform binaries come
 *    prebuilt as optional packages);
 * 4. when pinned, the command becomes a two-line wrapper putting /opt/node/<major>/bin first on PATH.
 */

/** the pod's npm prefix (images/README.md: `npm install -g` goes there; on the PATH of Node.js pods and SSH sessions) */
export const NPM_PREFIX = `${HOME}/.npm-global`;
/** the images' default Node major (images/base/rootfs/opt/podhost/bin/pod-node-version) */
const DEFAULT_NODE_MAJOR = 20;
const STEP_TIMEOUT_S = 600;
const SCRIPT_OUTPUT_MAX = 16 * 1024;

// Prints the pod's preset, its selected Node major and the majors its image carries.
const FACTS = `echo "preset=\${POD_PRESET:-}"
echo "selected=$(/opt/podhost/bin/pod-node-version 2>/dev/null)"
for d in /opt/node/*; do [ -x "$d/bin/node" ] && echo "installed=\${d##*/}"; done
exit 0`;

// The command of an earlier install goes (npm's link into the package, or our wrapper; anything
// else is the user's and stays): $cmd, $pkg, $P, $L set by the script that includes it.
const DROP_COMMAND = `b="$P/bin/$cmd"
if [ -L "$b" ]; then
  t=$(readlink -m "$b")
  case "$t" in "$L/$pkg/"*) rm -f "$b" ;; esac
elif [ -f "$b" ] && grep -qF -- "# podhost coding agent $pkg:" "$b"; then
  rm -f "$b"
fi`;

// $1 package, $2 a stage name, $3 command. Stdin: a tar holding <package>/. Exit 71: tar failed.
const PLACE = `set -u
P=${NPM_PREFIX}; L="$P/lib/node_modules"; pkg=$1; cmd=$3; stage="$L/.podhost-stage-$2"; old="$L/.podhost-old-$2"
wipe() { chmod -R u+rwx "$1" 2>/dev/null; rm -rf "$1"; }
mkdir -p "$L" "$P/bin" || exit 70
${DROP_COMMAND}
wipe "$stage"; wipe "$old"; mkdir -p "$stage" || exit 70
tar -x -f - -C "$stage" --no-same-owner --warning=no-timestamp || { ${sayWhyTarFailed('"$stage"')}; wipe "$stage"; exit 71; }
[ -d "$stage/$pkg" ] || { wipe "$stage"; echo "the archive holds no $pkg" >&2; exit 72; }
mkdir -p "$(dirname "$L/$pkg")" || exit 70
if [ -e "$L/$pkg" ] || [ -L "$L/$pkg" ]; then mv -T "$L/$pkg" "$old" || exit 72; fi
mv -T "$stage/$pkg" "$L/$pkg" || exit 72
wipe "$stage"; wipe "$old"
echo placed`;

// $1 command, $2 package, $3 Node major, $4 "pin" or "". The command npm linked, made a wrapper when pinned.
const LINK = `set -u
P=${NPM_PREFIX}; cmd=$1; pkg=$2; major=$3; b="$P/bin/$cmd"
[ -L "$b" ] || { echo "npm linked no $cmd command" >&2; exit 3; }
t=$(readlink -f "$b") || { echo "$cmd points nowhere" >&2; exit 3; }
case "$t" in "$P/lib/node_modules/$pkg/"*) ;; *) echo "$cmd does not point into $pkg" >&2; exit 3 ;; esac
[ -x "$t" ] || chmod u+x "$t" || exit 3
if [ "$4" = pin ]; then
  case "$t" in *[!A-Za-z0-9@._/+-]*) echo "$cmd has an unusual path" >&2; exit 3 ;; esac
  printf '#!/bin/sh\\n# podhost coding agent %s: runs on Node %s (docs/coding-agents.md)\\nPATH="/opt/node/%s/bin:$PATH" exec "%s" "$@"\\n' "$pkg" "$major" "$major" "$t" >"$b.podhost" || exit 70
  chmod 755 "$b.podhost" && mv -f "$b.podhost" "$b" || exit 70
fi
echo linked`;

// $1 command, $2 package. The command (npm's link into the package, or our wrapper) and the package go.
const REMOVE = `set -u
P=${NPM_PREFIX}; cmd=$1; pkg=$2; L="$P/lib/node_modules"
${DROP_COMMAND}
if [ -e "$L/$pkg" ] || [ -L "$L/$pkg" ]; then chmod -R u+rwx "$L/$pkg" 2>/dev/null; rm -rf "$L/$pkg" || exit 70; fi
case "$pkg" in @*/*) rmdir "$L/\${pkg%%/*}" 2>/dev/null ;; esac
echo removed`;

export interface NodeChoice {
  major: number;
  pinned: boolean;
}

export interface PodNodeFacts {
  preset: string;
  selected: number | null;
  installed: number[];
}

/**
 * The agent's lowest Node major: the catalog's, or its `engines.node`'s lowest if higher. semver is
 * loaded here, on a coding agent's first install: at the agent's start it cost ~5 ms of evaluation
 * (its ranges, regular expressions and caches) for a path most hosts rarely take.
 */
export async function minimumNodeMajor(agent: CodingAgent, enginesNode: string | null): Promise<number> {
  let fromEngines = 0;
  if (enginesNode) {
    const { default: semver } = await import("semver");
    try {
      fromEngines = semver.minVersion(enginesNode)?.major ?? 0;
    } catch {
      fromEngines = 0; // an engines field npm itself would not understand: the catalog's stands
    }
  }
  return Math.max(agent.minNodeMajor, fromEngines);
}

/** Step 1 (see above), pure. */
export function chooseNode(facts: PodNodeFacts, min: number): NodeChoice {
  const installed = [...facts.installed].sort((a, b) => a - b);
  if (
    facts.preset === "nodejs" &&
    facts.selected !== null &&
    facts.selected >= min &&
    installed.includes(facts.selected)
  )
    return { major: facts.selected, pinned: false };
  const pick =
    installed.find((m) => m >= Math.max(min, DEFAULT_NODE_MAJOR)) ?? installed.find((m) => m >= min);
  if (pick === undefined)
    throw new AgentError(
      "bad_request",
      `the agent needs Node ${min} or newer; this pod's image carries ${installed.join(", ") || "no Node"}`,
    );
  return { major: pick, pinned: true };
}

export async function podNodeFacts(docker: DockerClient, container: string): Promise<PodNodeFacts> {
  const r = await execInContainer(docker, container, [SH, "-c", FACTS], {
    workingDir: HOME,
    signal: AbortSignal.timeout(30_000),
    maxOutputBytes: 4096,
  });
  if (r.exitCode !== 0) throw scriptFailure("reading the pod's Node versions", r);
  const facts: PodNodeFacts = { preset: "", selected: null, installed: [] };
  for (const line of r.stdout.split("\n")) {
    const [key, value = ""] = line.split("=", 2);
    const n = /^\d{1,3}$/.test(value) ? Number(value) : null;
    if (key === "preset") facts.preset = value;
    else if (key === "selected") facts.selected = n;
    else if (key === "installed" && n !== null) facts.installed.push(n);
  }
  return facts;
}

/** Steps 2–4 in the running container; returns where the command runs. */
export async function installIntoPod(
  deps: { docker: DockerClient; streams: StreamExecutor },
  container: string,
  agent: CodingAgent,
  tree: PreparedTree,
  node: NodeChoice,
  signal: AbortSignal,
): Promise<void> {
  await placeTree(deps.streams, container, agent.package, agent.command, tree, signal);
  const npm = `/opt/node/${node.major}`;
  const rebuilt = await execInContainer(
    deps.docker,
    container,
    [
      TIMEOUT,
      "-k",
      "5",
      String(STEP_TIMEOUT_S),
      `${npm}/bin/node`,
      `${npm}/lib/node_modules/npm/bin/npm-cli.js`,
      "rebuild",
      "--global",
      agent.package,
    ],
    {
      workingDir: HOME,
      podPath: true,
      env: [
        `PATH=${npm}/bin:/usr/bin:/bin`,
        `HOME=${HOME}`,
        `NPM_CONFIG_PREFIX=${NPM_PREFIX}`,
        // no npmrc of the user's (it could hold a registry token, or ignore-scripts) or the image's
        "NPM_CONFIG_USERCONFIG=/opt/podhost/none/npmrc",
        "NPM_CONFIG_GLOBALCONFIG=/opt/podhost/none/global-npmrc",
        "NPM_CONFIG_OFFLINE=true",
        "NPM_CONFIG_CACHE=/tmp/podhost-npm-cache",
        "NPM_CONFIG_LOGS_MAX=0",
        "NPM_CONFIG_UPDATE_NOTIFIER=false",
        "NPM_CONFIG_FUND=false",
        "NPM_CONFIG_AUDIT=false",
      ],
      maxOutputBytes: SCRIPT_OUTPUT_MAX,
      signal: AbortSignal.any([signal, AbortSignal.timeout((STEP_TIMEOUT_S + 30) * 1000)]),
    },
  );
  if (rebuilt.exitCode !== 0) throw scriptFailure(`running ${agent.package}'s install scripts`, rebuilt);
  const linked = await execInContainer(
    deps.docker,
    container,
    [SH, "-c", LINK, "sh", agent.command, agent.package, String(node.major), node.pinned ? "pin" : ""],
    { workingDir: HOME, maxOutputBytes: SCRIPT_OUTPUT_MAX, signal: AbortSignal.timeout(60_000) },
  );
  if (linked.exitCode !== 0 || !linked.stdout.includes("linked"))
    throw scriptFailure(`linking the ${agent.command} command`, linked);
}

export async function removeFromPod(
  docker: DockerClient,
  container: string,
  agent: CodingAgent,
): Promise<void> {
  const r = await execInContainer(docker, container, [SH, "-c", REMOVE, "sh", agent.command, agent.package], {
    workingDir: HOME,
    maxOutputBytes: SCRIPT_OUTPUT_MAX,
    signal: AbortSignal.timeout(300_000),
  });
  if (r.exitCode !== 0 || !r.stdout.includes("removed")) throw scriptFailure(`removing ${agent.package}`, r);
}

/** The host's tar of the prepared package, streamed into the PLACE script. */
async function placeTree(
  streams: StreamExecutor,
  container: string,
  pkg: string,
  command: string,
  tree: PreparedTree,
  signal: AbortSignal,
): Promise<void> {
  const tar = spawn(
    "tar",
    [
      "-c",
      "-f",
      "-",
      "-C",
      path.join(tree.dir, "lib", "node_modules"),
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      pkg,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const tarErr = new CappedBytes(4096);
  tar.stderr.on("data", tarErr.push);
  const tarDone = new Promise<number | null>((resolve) => tar.once("close", resolve));
  const stage = Math.random().toString(36).slice(2, 10);
  let run: Awaited<ReturnType<StreamExecutor>>;
  try {
    run = await streams(
      container,
      [TIMEOUT, "-k", "5", String(STEP_TIMEOUT_S), SH, "-c", PLACE, "sh", pkg, stage, command],
      { workingDir: HOME, stdin: tar.stdout, signal },
    );
  } catch (err) {
    tar.kill("SIGKILL");
    throw err;
  }
  const out = new CappedBytes(4096);
  run.stdout.on("data", out.push);
  run.stdout.on("error", () => undefined);
  const [result, tarCode] = await Promise.all([run.done, tarDone]);
  // The pod's side first: when it stops reading (a full disk), the host's tar fails with a broken pipe.
  if (result.exitCode !== 0 || !out.text().includes("placed"))
    throw scriptFailure(`copying ${pkg} into the pod`, { ...result, stdout: out.text() });
  if (tarCode !== 0)
    throw new AgentError(
      "internal",
      `packing ${pkg} on the host failed: ${tarErr.text().trim().slice(0, 300)}`,
    );
}

/**
 * A failed step in one line. What the pod's scripts print is the package's and npm's output about
 * the package (never the user's files: no step reads them), kept short.
 */
function scriptFailure(what: string, r: { exitCode: number; stderr: string; stdout?: string }): AgentError {
  const text = (r.stderr || r.stdout || "").trim();
  const quota = text.includes("Disk quota exceeded") || text.includes("No space left on device");
  const tail = text.length > 300 ? `…${text.slice(-300)}` : text;
  return new AgentError(
    quota ? "bad_request" : "internal",
    quota
      ? `${what} failed: the pod's disk is full (its plan's disk limit)`
      : `${what} failed (exit ${r.exitCode})${tail ? `: ${tail}` : ""}`,
  );
}
