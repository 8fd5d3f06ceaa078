import type { ContainerCreateOptions, ContainerInspectInfo } from "dockerode";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { POD_ISOLATION } from "../docker/isolation";
import { HOME, LABEL_PORT, LABEL_PREFIX, podNames } from "../docker/naming";
import { SV } from "../docker/pod-bin";
import { LABEL_HELPER } from "../docker/pod-user";
import { listeningPorts } from "../docker/proc-net";
import { containerIp, inspectContainer, removeContainer, waitRunning } from "../docker/resources";
import { waitForPort } from "../docker/wait-port";
import type { Ingress } from "../ingress/nginx";
import { STANDBY_PORT, type VhostSpec } from "../ingress/vhost";
import { type BuildBox, candidateName, HELPER_CANDIDATE, LABEL_GIT_POD, removeAndWait } from "./build";
import { candidateArgv } from "./candidate";
import { DeployFailure } from "./failure";
import type { DeployLog } from "./log";
import { RELEASES, switchAndRestart, switchRelease } from "./release";
import {
  awaitStandby,
  podVhost,
  type StandbyBaseline,
  type StandbyCandidate,
  type StandbyRoute,
  standbyBaseline,
  startOnStandby,
  stopCandidate,
} from "./standby";

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
  /**
   * The standby (./standby.ts), when the pod runs and its vhost is known: the route the deploy put
   * first, and the candidate the build's exec already started with the listeners before it.
   */
  standby?: {
    route: StandbyRoute;
    baseline: StandbyBaseline | null;
    candidate: StandbyCandidate | null;
  } | null;
}

const APP_PRESETS = new Set(["nodejs", "python"]);

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
  // the pod's own address and port, where its app answers (and the ingress sends)
  const vhost = podVhost(t.pod, main, n.network);
  const pod: PodPort = {
    ip: containerIp(main, n.network) ?? "",
    port: Number(main.Config.Labels?.[LABEL_PORT]),
  };
  if (t.standby && vhost) {
    let { candidate, baseline } = t.standby;
    if (!candidate) {
      baseline = await standbyBaseline(main, pod.ip);
      if (baseline) {
        t.log.note(`starting the new release beside the serving one (standby port ${STANDBY_PORT})`);
        const argv = candidateArgv(t.release, t.preset, STANDBY_PORT);
        candidate = await startOnStandby(docker, t.box.name, main, argv);
      }
    }
    if (candidate && baseline) {
      const outcome = await awaitStandby({
        docker,
        box: t.box.name,
        ip: pod.ip,
        port: pod.port,
        baseline,
        candidate,
        startTimeoutMs: deps.startTimeoutMs,
        signal: t.signal,
      });
      if (outcome.kind === "answers") return switchFromStandby(deps, t, n.container, pod, t.standby.route);
      if (outcome.kind === "port_mismatch") throw portMismatch(outcome.ports, pod.port);
      if (outcome.kind === "timeout") throw await notAnswering(docker, t.box.name, pod.port, true);
      t.log.note(`${outcome.why}: starting it in a container of its own`);
    } else
      t.log.note(
        `port ${STANDBY_PORT} is taken in the pod: starting the new release in a container of its own`,
      );
  }
  await switchThroughContainer(deps, t, main, pod, vhost);
}

interface PodPort {
  ip: string;
  port: number;
}

/**
 * The new release answers on the standby port: ~/app switches and the pod's app restarts on it.
 * From the moment the old app stops until the new one listens, the pod's port refuses and the
 * ingress sends every request to the standby; once the pod's app answers, the candidate goes with
 * the build container (a second later at the earliest: requests in flight to it finish).
 */
async function switchFromStandby(
  deps: SwitchDeps,
  t: SwitchTarget,
  container: string,
  pod: PodPort,
  route: StandbyRoute,
) {
  const { docker } = deps;
  t.log.note("the new release answers; restarting the pod's app on it (the new release serves meanwhile)");
  try {
    await deps.podLock(() => switchAndRestart(docker, container, t.release));
    await expectPodAnswers(deps, t, container, pod);
    // the pod's port first again before the candidate may go
    await route.restore();
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
async function expectPodAnswers(deps: SwitchDeps, t: SwitchTarget, container: string, pod: PodPort) {
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
  pod: PodPort,
  vhost: VhostSpec | null,
): Promise<void> {
  const { docker } = deps;
  const n = podNames(deps.prefix, t.pod);
  const cname = candidateName(deps.prefix, t.pod);
  await removeAndWait(docker, cname);
  await docker.createContainer(candidateOptions(deps.prefix, t.pod, main, t.release, t.preset, pod.port));
  let routedToCandidate = false;
  try {
    await docker.getContainer(cname).start();
    const { ip } = await waitRunning(docker, cname, n.network, t.signal).catch(async () => {
      throw await startFailure(docker, cname, pod.port, t.box.name);
    });
    if (!(await waitAnswer(docker, cname, ip, pod.port, deps.startTimeoutMs, t.signal)))
      throw await startFailure(docker, cname, pod.port, t.box.name);
    t.log.note("the new release answers; moving traffic to it");
    if (vhost) {
      await deps.ingress.upsert({ ...vhost, ip });
      routedToCandidate = true;
    }
    await deps.podLock(() => switchAndRestart(docker, n.container, t.release));
    t.log.note("~/app switched; the pod's app restarted on it");
    await expectPodAnswers(deps, t, n.container, pod);
    t.log.note("the pod's app answers; moving traffic back to it");
  } finally {
    if (routedToCandidate && vhost) await deps.ingress.upsert(vhost);
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
