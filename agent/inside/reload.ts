import { RELOAD_MAX_OUTPUT_BYTES, RELOAD_STEP_TIMEOUT_S } from "../../shared/protocol/inside";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { HOME, podNames } from "../docker/naming";
import { AGENT_PATH, SH } from "../docker/pod-bin";
import { inspectContainer } from "../docker/resources";
import { RUNIT_FNS } from "../docker/runit";
import { AgentError } from "../errors";
import type { Logger } from "../logger";

/**
 * Reload: install the app's dependencies from the manifest in ~/app, then restart the preset's
 * services (../docker/runit.ts: nginx reloads in place, the others get a new process). One fixed
 * script, run as pod_user in the running container. Each install or build step runs under
 * coreutils `timeout`, its output appended to ~/logs/build.log; a failing
 * step ends the script with `fail <status>` on stdout followed by the tail of that step's output,
 * which the host reports as a result (`ok: false`), not an error code.
 *
 * Protocol lines on stdout: `deps npm|pip|composer`, `unsupported <file>`, `restarted <svc> <status>`,
 * and on failure `fail <status>` with everything after it being the step's output.
 *
 * The install steps run as the app would, on the pod's own PATH (its Node.js, its
 * `~/.npm-global/bin`): the exec keeps that PATH, and the script saves it in `U` and puts the
 * agent's fixed PATH in its place for everything else it runs (mktemp, cat, tail, sv).
 */

/** services each preset runs (images/README.md); workers and cron are left alone */
export const RELOAD_SERVICES: Record<string, string[]> = {
  static: ["web"],
  php: ["web", "php-fpm"],
  nodejs: ["app"],
  python: ["app"],
};

const SCRIPT = `set -u
U=$PATH; PATH=${AGENT_PATH}; export PATH
H=${HOME}; export HOME="$H"
P=$1; shift
T=${RELOAD_STEP_TIMEOUT_S}
log="$H/logs/build.log"
mkdir -p "$H/logs" "$H/.pod"
out=$(mktemp "$H/.pod/.reload.XXXXXX") || { echo "fail 70"; echo "cannot create a temporary file in $H/.pod"; exit 0; }
trap 'rm -f "$out"' EXIT
stamp() { printf '[%s] reload: %s\\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$log"; }
step() {
  stamp "\\$ $*"
  : >"$out"
  PATH=$U /usr/bin/timeout -k 5 "$T" "$@" </dev/null >>"$out" 2>&1; rc=$?
  [ "$rc" -eq 124 ] && echo "[timed out after $T s]" >>"$out"
  cat "$out" >>"$log"
  [ "$rc" -eq 0 ] && return 0
  stamp "failed with exit status $rc"
  echo "fail $rc"
  tail -c ${RELOAD_MAX_OUTPUT_BYTES} "$out"
  exit 0
}
npm_deps() {
  step npm install --no-audit --no-fund
  echo "deps npm"
  if (PATH=$U; node -e 'process.exit(require("./package.json").scripts?.build ? 0 : 1)') 2>/dev/null; then
    step npm run build
  fi
}
pip_deps() {
  [ -x .venv/bin/pip ] || step python3 -m venv .venv
  step .venv/bin/pip install --disable-pip-version-check --no-input -r requirements.txt
  echo "deps pip"
}
composer_deps() {
  step composer install --no-interaction --no-progress
  echo "deps composer"
}
if cd "$H/app" 2>/dev/null; then
  # the manifest first: no tool is looked for (python3 alone is ~50 ms) for an app without one
  has_npm=; [ -f package.json ] && (PATH=$U; command -v npm) >/dev/null 2>&1 && has_npm=1
  has_pip=; [ -f requirements.txt ] && (PATH=$U; python3 -c 'import venv') >/dev/null 2>&1 && has_pip=1
  has_composer=; [ -f composer.json ] && (PATH=$U; command -v composer) >/dev/null 2>&1 && has_composer=1
  if [ "$P" = python ] && [ -n "$has_pip" ]; then pip_deps
  elif [ "$P" = php ] && [ -n "$has_composer" ]; then composer_deps
  elif [ -n "$has_npm" ]; then npm_deps
  elif [ -n "$has_pip" ]; then pip_deps
  elif [ -n "$has_composer" ]; then composer_deps
  fi
  [ -f package.json ] && [ -z "$has_npm" ] && echo "unsupported package.json"
  [ -f requirements.txt ] && [ -z "$has_pip" ] && echo "unsupported requirements.txt"
  [ -f composer.json ] && [ -z "$has_composer" ] && echo "unsupported composer.json"
  [ -f go.mod ] && echo "unsupported go.mod"
fi
${RUNIT_FNS}
sv_restart "$@"
exit 0`;

export type ReloadOutcome =
  | { ok: true; services: string[]; depsInstalled: "npm" | "pip" | "composer" | null; unsupported: string[] }
  | { ok: false; depsOutput: string; exitCode: number | null };

export async function reloadApp(
  docker: DockerClient,
  prefix: string,
  pod: string,
  preset: string,
  log: Logger,
): Promise<ReloadOutcome> {
  const services = RELOAD_SERVICES[preset];
  if (!services) throw new AgentError("bad_request", `preset: unknown preset ${preset}`);
  const container = podNames(prefix, pod).container;
  const info = await inspectContainer(docker, container);
  if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
  if (!info.State.Running) throw new AgentError("bad_request", "pod is not running; start it first");

  // npm install, npm run build (or venv, pip install) each get the step timeout; then the restarts.
  const r = await execInContainer(docker, container, [SH, "-c", SCRIPT, "sh", preset, ...services], {
    workingDir: HOME,
    podPath: true,
    maxOutputBytes: RELOAD_MAX_OUTPUT_BYTES * 2,
    signal: AbortSignal.timeout((RELOAD_STEP_TIMEOUT_S * 3 + 120) * 1000),
  });
  if (r.exitCode !== 0) {
    throw new AgentError(
      "internal",
      `reloading pod ${pod} failed (exit ${r.exitCode}): ${r.stderr.trim().slice(0, 300)}`,
    );
  }
  const failAt = /^fail (\d+)$/m.exec(r.stdout);
  if (failAt) {
    const output = r.stdout.slice(failAt.index + failAt[0].length + 1);
    return { ok: false, depsOutput: output, exitCode: Number(failAt[1]) };
  }
  let depsInstalled: "npm" | "pip" | "composer" | null = null;
  const unsupported: string[] = [];
  const restarted: string[] = [];
  for (const line of r.stdout.split("\n")) {
    const [word, arg, status] = line.trim().split(" ");
    if (word === "deps" && (arg === "npm" || arg === "pip" || arg === "composer")) depsInstalled = arg;
    else if (word === "unsupported" && arg) unsupported.push(arg);
    else if (word === "restarted" && arg) {
      restarted.push(arg);
      if (status !== "0") log.warn("service restart did not confirm", { pod, service: arg, status });
    }
  }
  return { ok: true, services: restarted, depsInstalled, unsupported };
}
