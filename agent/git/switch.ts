import type { ContainerCreateOptions, ContainerInspectInfo } from "dockerode";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { POD_ISOLATION } from "../docker/isolation";
import { HOME, LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT, LABEL_PREFIX, podNames } from "../docker/naming";
import { SV } from "../docker/pod-bin";
import { LABEL_HELPER } from "../docker/pod-user";
import { containerIp, inspectContainer, removeContainer, waitRunning } from "../docker/resources";
import { restartServices } from "../docker/runit";
import { waitForPort } from "../docker/wait-port";
import type { Ingress } from "../ingress/nginx";
import { candidateName, HELPER_CANDIDATE, LABEL_GIT_POD, removeAndWait } from "./build";
import { DeployFailure } from "./failure";
import type { DeployLog } from "./log";
import { RELEASES, switchRelease } from "./release";

/**
 * The health-gated switch. Node.js and Python: the new release starts beside the serving one in a
 * candidate container (the pod's image, volume, network, env and limits, running only the image's
 * `run-app` on the release's directory via POD_APP_DIR); once its port answers, the ingress points
 * at the candidate, `~/app` is switched, the pod's own `app` service restarts on it, and once that
 * answers the ingress points back and the candidate goes. No request meets a restarting server.
 * Static and PHP: the switch is one atomic rename (php-fpm then reloads gracefully).
 * Anything that fails before the switch leaves the old release serving and the ingress on it.
 */

export interface SwitchDeps {
  docker: DockerClient;
  ingress: Ingress;
  prefix: string;
  /** runs fn under the pod's lock (env writes, stop, reload wait while ~/app changes) */
  podLock<T>(fn: () => Promise<T>): Promise<T>;
  startTimeoutMs: number;
}

export interface SwitchTarget {
  pod: string;
  release: string;
  /** the directory inside the release to serve (a static build's output), null: the release itself */
  webRoot: string | null;
  preset: "static" | "php" | "nodejs" | "python";
  /** the release serving before (`initial` for a first ~/app directory): where a failed switch goes back */
  previous: string | null;
  /** the build container: where the symlink is switched */
  box: string;
  log: DeployLog;
  signal?: AbortSignal;
}

const APP_PRESETS = new Set(["nodejs", "python"]);

/**
 * The candidate's app: the images' `run-app` rules (images/README.md: `~/.pod/start`, a Procfile's
 * web: line, then the preset's defaults, `.env` loaded by pod-env-exec) applied to the release's
 * directory instead of ~/app. Kept here rather than in the images so a deploy does not depend on
 * an image rebuild; the switch then checks that the pod's own app answers too, and goes back to
 * the previous release when it does not. $1 preset, $2 the release's directory, $3 the port.
 */
const CANDIDATE_RUN = `set -euo pipefail
H=${HOME}; P=$1; APP=$2
exec >>"$H/logs/app.log" 2>&1
cd "$APP"
export PORT=$3
if [ "$P" = nodejs ]; then
  v=$(/opt/podhost/bin/pod-node-version); export PATH="/opt/node/$v/bin:$PATH"
elif [ -x "$APP/.venv/bin/python" ]; then
  export VIRTUAL_ENV="$APP/.venv" PATH="$APP/.venv/bin:$PATH"
fi
set --
if [ -s "$H/.pod/start" ]; then
  set -- bash -c "$(cat "$H/.pod/start")"
elif [ -f Procfile ] && web=$(sed -n 's/^web:[[:space:]]*//p' Procfile | head -n 1) && [ -n "$web" ]; then
  set -- bash -c "$web"
elif [ "$P" = nodejs ]; then
  if [ -f package.json ] && node -e 'process.exit(require("./package.json").scripts?.start ? 0 : 1)' 2>/dev/null; then
    set -- npm start
  else
    for f in server.js index.js app.js main.js; do [ -f "$f" ] && { set -- node "$f"; break; }; done
  fi
else
  for f in app.py main.py server.py; do [ -f "$f" ] && { set -- python "$f"; break; }; done
fi
[ $# -gt 0 ] || { echo "[podhost] $(date -u +%FT%TZ) candidate: no start command found in $APP"; exit 1; }
echo "[podhost] $(date -u +%FT%TZ) starting the new release (candidate): $*"
exec /opt/podhost/bin/pod-env-exec "$APP/.env" "$@"`;

export async function healthGatedSwitch(deps: SwitchDeps, t: SwitchTarget): Promise<void> {
  const { docker } = deps;
  const n = podNames(deps.prefix, t.pod);
  const main = await inspectContainer(docker, n.container);
  const running = Boolean(main?.State.Running);
  if (!main || !running || !APP_PRESETS.has(t.preset)) {
    await deps.podLock(async () => {
      await switchRelease(docker, t.box, t.release, t.webRoot);
      if (running && t.preset === "php") {
        // USR2: php-fpm's graceful reload (new workers, fresh realpath and opcache)
        await execInContainer(docker, n.container, [SV, "2", "php-fpm"], {
          signal: AbortSignal.timeout(20_000),
        });
      }
    });
    t.log.note(running ? "switched ~/app to the new release" : "switched ~/app (the pod is stopped)");
    return;
  }
  const labels = main.Config.Labels ?? {};
  const port = Number(labels[LABEL_PORT]);
  const domain = labels[LABEL_DOMAIN];
  const podId = labels[LABEL_POD_ID];
  const mainIp = containerIp(main, n.network);
  const cname = candidateName(deps.prefix, t.pod);
  await removeAndWait(docker, cname);
  t.log.note(`starting the new release beside the serving one (port ${port})`);
  await docker.createContainer(candidateOptions(deps.prefix, t.pod, main, t.release, t.preset, port));
  let routedToCandidate = false;
  try {
    await docker.getContainer(cname).start();
    const { ip } = await waitRunning(docker, cname, n.network, t.signal).catch(async () => {
      throw await startFailure(docker, cname, port, t.box);
    });
    if (!(await waitAnswer(docker, cname, ip, port, deps.startTimeoutMs, t.signal)))
      throw await startFailure(docker, cname, port, t.box);
    t.log.note("the new release answers; moving traffic to it");
    if (domain && podId && mainIp) {
      await deps.ingress.upsert({ pod: t.pod, podId, domains: [domain], ip, port });
      routedToCandidate = true;
    }
    await deps.podLock(async () => {
      await switchRelease(docker, t.box, t.release);
      t.log.note("~/app switched; restarting the pod's app on it");
      await restartServices(docker, n.container, ["app"]);
    });
    if (!(await waitForPort(mainIp ?? "", port, deps.startTimeoutMs, t.signal))) {
      // The candidate answered but the pod's own app does not: go back to what served before.
      const previous = t.previous;
      if (previous) {
        await deps.podLock(async () => {
          await switchRelease(docker, t.box, previous);
          await restartServices(docker, n.container, ["app"]);
        });
        await waitForPort(mainIp ?? "", port, deps.startTimeoutMs, t.signal);
      }
      throw new DeployFailure(
        "missing_start",
        `the pod's app did not answer on port ${port} after the switch${previous ? `; release ${previous} serves again` : ""}`,
      );
    }
    t.log.note("the pod's app answers; moving traffic back to it");
  } finally {
    if (routedToCandidate && domain && podId && mainIp) {
      await deps.ingress.upsert({ pod: t.pod, podId, domains: [domain], ip: mainIp, port });
    }
    // By id, a moment later: the old nginx workers finish what they had in flight to the candidate,
    // and a next deploy's candidate (same name) is never the one removed.
    const id = (await inspectContainer(docker, cname))?.Id;
    if (id && routedToCandidate) later(() => removeContainer(docker, id), 1000);
    else if (id) await removeContainer(docker, id);
  }
  t.log.note("switched: the pod serves the new release");
}

function candidateOptions(
  prefix: string,
  pod: string,
  main: ContainerInspectInfo,
  release: string,
  preset: string,
  port: number,
): ContainerCreateOptions {
  const n = podNames(prefix, pod);
  const hc = main.HostConfig;
  return {
    name: candidateName(prefix, pod),
    Image: main.Config.Image,
    User: "1000:1000",
    WorkingDir: `${RELEASES}/${release}`,
    Cmd: ["/bin/bash", "-c", CANDIDATE_RUN, "run-app", preset, `${RELEASES}/${release}`, String(port)],
    Env: main.Config.Env ?? [],
    Labels: { [LABEL_PREFIX]: prefix, [LABEL_HELPER]: HELPER_CANDIDATE, [LABEL_GIT_POD]: pod },
    HostConfig: {
      ...POD_ISOLATION,
      Tmpfs: hc.Tmpfs,
      Memory: hc.Memory,
      MemorySwap: hc.MemorySwap,
      NanoCpus: hc.NanoCpus,
      PidsLimit: hc.PidsLimit,
      OomScoreAdj: 500,
      Mounts: [{ Type: "volume", Source: n.volume, Target: HOME, ReadOnly: false }],
      NetworkMode: n.network,
      LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
    },
    NetworkingConfig: { EndpointsConfig: { [n.network]: {} } },
  };
}

/** Wait for the port; stop early when the candidate exited (its app died). */
async function waitAnswer(
  docker: DockerClient,
  name: string,
  ip: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal?.aborted) {
    if (await waitForPort(ip, port, 500, signal)) return true;
    const info = await inspectContainer(docker, name);
    if (!info?.State.Running) return false;
  }
  return false;
}

/** Why the candidate never answered: listening elsewhere (port_mismatch), else missing_start. */
async function startFailure(
  docker: DockerClient,
  name: string,
  port: number,
  box: string,
): Promise<DeployFailure> {
  const info = await inspectContainer(docker, name);
  if (info?.State.Running) {
    const r = await execInContainer(docker, name, ["/bin/cat", "/proc/net/tcp", "/proc/net/tcp6"], {
      signal: AbortSignal.timeout(10_000),
      maxOutputBytes: 256 * 1024,
    }).catch(() => null);
    const ports = r ? listeningPorts(r.stdout).filter((p) => p !== port) : [];
    if (ports.length > 0)
      return new DeployFailure(
        "port_mismatch",
        `the app listens on port ${ports.join(", ")}, not on ${port} (listen on process.env.PORT)`,
      );
  }
  const tail = await execInContainer(docker, box, ["/usr/bin/tail", "-c", "600", `${HOME}/logs/app.log`], {
    signal: AbortSignal.timeout(10_000),
    maxOutputBytes: 4096,
  }).catch(() => null);
  const last = (tail?.stdout ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-3)
    .join(" | ");
  return new DeployFailure(
    "missing_start",
    `the new release ${info?.State.Running ? `did not listen on port ${port} in time` : "exited without listening"}${last ? `: ${last}` : ""}`.slice(
      0,
      1500,
    ),
  );
}

/** Run `fn` after `ms` without waiting for it; a failure is left to the next run's leftover check. */
function later(fn: () => Promise<unknown>, ms: number) {
  setTimeout(() => void fn().catch(() => undefined), ms).unref();
}

/** LISTEN sockets (state 0A) in /proc/net/tcp{,6} text: their local ports. */
export function listeningPorts(text: string): number[] {
  const ports = new Set<number>();
  for (const line of text.split("\n")) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 4 || cols[3] !== "0A") continue;
    const local = cols[1] ?? "";
    // Docker's embedded DNS resolver listens on 127.0.0.11 in every container of a user network.
    if (local.startsWith("0B00007F:")) continue;
    const hex = local.slice(local.lastIndexOf(":") + 1);
    const p = Number.parseInt(hex, 16);
    if (Number.isInteger(p) && p > 0) ports.add(p);
  }
  return [...ports].sort((a, b) => a - b);
}
