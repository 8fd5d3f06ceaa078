import type { ContainerCreateOptions, ContainerInspectInfo } from "dockerode";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { POD_ISOLATION } from "../docker/isolation";
import { HOME, LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT, LABEL_PREFIX, podNames } from "../docker/naming";
import { SV } from "../docker/pod-bin";
import { LABEL_HELPER } from "../docker/pod-user";
import { listeningPorts } from "../docker/proc-net";
import { containerIp, inspectContainer, removeContainer, waitRunning } from "../docker/resources";
import { waitForPort } from "../docker/wait-port";
import type { Ingress } from "../ingress/nginx";
import { STANDBY_PORT } from "../ingress/vhost";
import { type BuildBox, candidateName, HELPER_CANDIDATE, LABEL_GIT_POD, removeAndWait } from "./build";
import { DeployFailure } from "./failure";
import type { DeployLog } from "./log";
import { RELEASES, switchAndRestart, switchRelease } from "./release";
import { CANDIDATE_PID_FILE, startOnStandby, stopCandidate } from "./standby";

/**
 * The health-gated switch. Node.js and Python: the new release starts beside the serving one, on
 * the standby port in the build container (./standby.ts; an app that ignores PORT gets a candidate
 * container of its own instead), running the images' `run-app` rules on the release's directory.
 * Once it answers, `~/app` is switched and the pod's own `app` service restarts on it; while that
 * boots, the ingress sends to the new release (the standby upstream, or the candidate container's
 * address), and once the pod's app answers the candidate goes. No request meets a restarting
 * server. Static and PHP: the switch is one atomic rename (php-fpm then reloads gracefully).
 * Anything that fails before the switch leaves the old release serving.
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
  /** the build container: where the symlink is switched and the standby candidate runs */
  box: BuildBox;
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
# each exec is a session leader: its pid names the process group a stop ends (./standby.ts)
{ echo $$ >${CANDIDATE_PID_FILE}; } 2>/dev/null || true
cd "$APP"
export PORT=$3
if [ "$P" = nodejs ]; then
  . /opt/podhost/lib/node-major.sh; node_major; export PATH="/opt/node/$NODE_MAJOR/bin:$PATH"
elif [ -x "$APP/.venv/bin/python" ]; then
  export VIRTUAL_ENV="$APP/.venv" PATH="$APP/.venv/bin:$PATH"
fi
set --
if [ -s "$H/.pod/start" ]; then
  set -- bash -c "$(cat "$H/.pod/start")"
elif [ -f Procfile ] && web=$(sed -n 's/^web:[[:space:]]*//p' Procfile | head -n 1) && [ -n "$web" ]; then
  set -- bash -c "$web"
elif [ "$P" = nodejs ]; then
  if [ -f package.json ] && [ -f /opt/podhost/lib/npm-start.sh ]; then
    . /opt/podhost/lib/npm-start.sh && npm_start && set -- "\${NPM_START[@]}"
  elif [ -f package.json ] && node -e 'process.exit(require("./package.json").scripts?.start ? 0 : 1)' 2>/dev/null; then
    set -- npm start # an image from before lib/npm-start.sh
  fi
  if [ $# -eq 0 ]; then
    for f in server.js index.js app.js main.js; do [ -f "$f" ] && { set -- node "$f"; break; }; done
  fi
else
  for f in app.py main.py server.py; do [ -f "$f" ] && { set -- python "$f"; break; }; done
fi
printf -v now '%(%Y-%m-%dT%H:%M:%SZ)T' -1
[ $# -gt 0 ] || { echo "[podhost] $now candidate: no start command found in $APP"; exit 1; }
echo "[podhost] $now starting the new release (candidate): $*"
exec /opt/podhost/bin/pod-env-exec "$APP/.env" "$@"`;

export async function healthGatedSwitch(deps: SwitchDeps, t: SwitchTarget): Promise<void> {
  const { docker } = deps;
  const n = podNames(deps.prefix, t.pod);
  const main = await inspectContainer(docker, n.container);
  const running = Boolean(main?.State.Running);
  if (!main || !running || !APP_PRESETS.has(t.preset)) {
    await deps.podLock(async () => {
      await switchRelease(docker, t.box.name, t.release, t.webRoot);
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
  const pod: PodAddress = {
    port: Number(labels[LABEL_PORT]),
    domain: labels[LABEL_DOMAIN] ?? "",
    podId: labels[LABEL_POD_ID] ?? "",
    ip: containerIp(main, n.network) ?? "",
  };
  if (pod.domain && pod.podId && pod.ip) {
    // the pod's vhost as this agent renders it, with the standby upstream (a no-op when it has it)
    await deps.ingress.upsert({
      pod: t.pod,
      podId: pod.podId,
      domains: [pod.domain],
      ip: pod.ip,
      port: pod.port,
    });
    t.log.note(`starting the new release beside the serving one (standby port ${STANDBY_PORT})`);
    const standby = await startOnStandby({
      docker,
      box: t.box.name,
      main,
      ip: pod.ip,
      port: pod.port,
      argv: (port) => candidateArgv(t.release, t.preset, port),
      startTimeoutMs: deps.startTimeoutMs,
      signal: t.signal,
    });
    if (standby.kind === "answers") return switchFromStandby(deps, t, n.container, pod);
    if (standby.kind === "port_mismatch") throw portMismatch(standby.ports, pod.port);
    if (standby.kind === "timeout") throw await notAnswering(docker, t.box.name, pod.port, true);
    t.log.note(`${standby.why}: starting it in a container of its own`);
  }
  await switchThroughContainer(deps, t, main, pod);
}

interface PodAddress {
  ip: string;
  port: number;
  domain: string;
  podId: string;
}

/**
 * The new release answers on the standby port: ~/app switches and the pod's app restarts on it.
 * From the moment the old app stops until the new one listens, the pod's port refuses and the
 * ingress sends every request to the standby; once the pod's app answers, the candidate goes with
 * the build container (a second later at the earliest: requests in flight to it finish).
 */
async function switchFromStandby(deps: SwitchDeps, t: SwitchTarget, container: string, pod: PodAddress) {
  const { docker } = deps;
  t.log.note("the new release answers; restarting the pod's app on it (the new release serves meanwhile)");
  try {
    await deps.podLock(() => switchAndRestart(docker, container, t.release));
    await expectPodAnswers(deps, t, container, pod);
  } catch (err) {
    await stopCandidate(docker, t.box.name);
    throw err;
  }
  t.box.holdFor(1000);
  t.log.note("switched: the pod's app serves the new release");
}

/**
 * The pod's own app must answer on its port after the switch. When it does not (the candidate did),
 * ~/app goes back to the release that served before and the app restarts on it.
 */
async function expectPodAnswers(deps: SwitchDeps, t: SwitchTarget, container: string, pod: PodAddress) {
  if (await waitForPort(pod.ip, pod.port, deps.startTimeoutMs, t.signal)) return;
  const previous = t.previous;
  if (previous) {
    await deps.podLock(() => switchAndRestart(deps.docker, container, previous));
    await waitForPort(pod.ip, pod.port, deps.startTimeoutMs, t.signal);
  }
  throw new DeployFailure(
    "missing_start",
    `the pod's app did not answer on port ${pod.port} after the switch${previous ? `; release ${previous} serves again` : ""}`,
  );
}

/**
 * The candidate container: for an app the standby cannot take (it ignores PORT, or exits), and when
 * the pod's address is unknown. It gets a network namespace of its own, where the pod's port is
 * free; the ingress points at it while the pod's app restarts, then back.
 */
async function switchThroughContainer(
  deps: SwitchDeps,
  t: SwitchTarget,
  main: ContainerInspectInfo,
  pod: PodAddress,
): Promise<void> {
  const { docker } = deps;
  const n = podNames(deps.prefix, t.pod);
  const { port, domain, podId } = pod;
  const mainIp = pod.ip || null;
  const cname = candidateName(deps.prefix, t.pod);
  await removeAndWait(docker, cname);
  await docker.createContainer(candidateOptions(deps.prefix, t.pod, main, t.release, t.preset, port));
  let routedToCandidate = false;
  try {
    await docker.getContainer(cname).start();
    const { ip } = await waitRunning(docker, cname, n.network, t.signal).catch(async () => {
      throw await startFailure(docker, cname, port, t.box.name);
    });
    if (!(await waitAnswer(docker, cname, ip, port, deps.startTimeoutMs, t.signal)))
      throw await startFailure(docker, cname, port, t.box.name);
    t.log.note("the new release answers; moving traffic to it");
    if (domain && podId && mainIp) {
      await deps.ingress.upsert({ pod: t.pod, podId, domains: [domain], ip, port });
      routedToCandidate = true;
    }
    await deps.podLock(() => switchAndRestart(docker, n.container, t.release));
    t.log.note("~/app switched; the pod's app restarted on it");
    await expectPodAnswers(deps, t, n.container, pod);
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

const candidateArgv = (release: string, preset: string, port: number) => [
  "/bin/bash",
  "-c",
  CANDIDATE_RUN,
  "run-app",
  preset,
  `${RELEASES}/${release}`,
  String(port),
];

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
    Cmd: candidateArgv(release, preset, port),
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

/** Why the candidate container never answered: listening elsewhere (port_mismatch), else missing_start. */
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
    if (ports.length > 0) return portMismatch(ports, port);
  }
  return notAnswering(docker, box, port, Boolean(info?.State.Running));
}

const portMismatch = (ports: number[], port: number) =>
  new DeployFailure(
    "port_mismatch",
    `the app listens on port ${ports.join(", ")}, not on ${port} (listen on process.env.PORT)`,
  );

/** missing_start, with the last lines of the app's log */
async function notAnswering(
  docker: DockerClient,
  box: string,
  port: number,
  running: boolean,
): Promise<DeployFailure> {
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
    `the new release ${running ? `did not listen on port ${port} in time` : "exited without listening"}${last ? `: ${last}` : ""}`.slice(
      0,
      1500,
    ),
  );
}

/** Run `fn` after `ms` without waiting for it; a failure is left to the next run's leftover check. */
function later(fn: () => Promise<unknown>, ms: number) {
  setTimeout(() => void fn().catch(() => undefined), ms).unref();
}
