import type { ContainerInspectInfo } from "dockerode";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT } from "../docker/naming";
import { listeningPorts, readBoundedFile } from "../docker/proc-net";
import { containerIp } from "../docker/resources";
import { waitForPort } from "../docker/wait-port";
import type { Ingress } from "../ingress/nginx";
import { STANDBY_PORT, type VhostSpec } from "../ingress/vhost";

/**
 * The new release on the standby port. The build container shares the running pod's network
 * namespace (./build.ts), so an app started there on STANDBY_PORT answers at the pod's own address,
 * where the ingress's standby upstream points (ingress/vhost.ts): no container to start.
 *
 * For the length of a deploy the pod's vhost puts the standby first and the pod's own port second
 * (`StandbyRoute`, one reload while the deploy fetches and builds): every request tries the
 * standby, finds it refused (a few microseconds on the pod's bridge) and goes to the serving app,
 * until the new release listens there; from then on it takes every request, while ~/app switches
 * and the pod's app restarts on it. Then the vhost goes back to the pod's port first. Had the
 * reload not happened, the standby still takes the requests the pod's port refuses while the app
 * restarts: nothing depends on it but how early the new release serves.
 *
 * An app that ignores PORT cannot bind the pod's port beside the serving app (or takes it when
 * nothing serves there) and is handed to the candidate container instead (./switch.ts), which gives
 * it a namespace of its own; so is one that exits, which the candidate container then classifies.
 */

/** where the candidate's shell writes its pid (= its process group: each exec is a session leader) */
export const CANDIDATE_PID_FILE = "/tmp/podhost-candidate.pid";

/** how often the wait looks at the namespace's listening sockets and whether the candidate exited */
const CHECK_EVERY_MS = 250;

/** The pod's vhost as the ingress renders it (from its container's labels); null when incomplete. */
export function podVhost(pod: string, main: ContainerInspectInfo, network: string): VhostSpec | null {
  const labels = main.Config.Labels ?? {};
  const ip = containerIp(main, network);
  const port = Number(labels[LABEL_PORT]);
  const domain = labels[LABEL_DOMAIN];
  const podId = labels[LABEL_POD_ID];
  if (!ip || !domain || !podId || !Number.isInteger(port)) return null;
  return { pod, podId, domains: [domain], ip, port };
}

/** The pod's vhost for the length of a deploy: the standby first, then back. */
export class StandbyRoute {
  private preferred: Promise<void> | null = null;
  private over = false;

  constructor(
    private readonly ingress: Ingress,
    readonly vhost: VhostSpec,
  ) {}

  /**
   * Put the standby first (once, and never after `restore`), unless something of the pod's own
   * listens there already (it would get the visitors); resolves when nginx uses it, never rejects.
   */
  prefer(main: ContainerInspectInfo): Promise<void> {
    if (this.over) return Promise.resolve();
    this.preferred ??= (async () => {
      if (!(await standbyBaseline(main, this.vhost.ip))) return;
      await this.ingress.upsert({ ...this.vhost, standbyFirst: true });
    })().catch(() => undefined);
    return this.preferred;
  }

  /** The pod's port first again (upserts run in the order called: after the one `prefer` made). */
  async restore(): Promise<void> {
    this.over = true;
    if (!this.preferred) return;
    await this.preferred;
    await this.ingress.upsert(this.vhost);
  }
}

/** The standby route of a running Node.js or Python pod whose vhost is known; null otherwise. */
export function standbyRoute(
  ingress: Ingress,
  pod: string,
  preset: string,
  main: ContainerInspectInfo,
  network: string,
): StandbyRoute | null {
  if ((preset !== "nodejs" && preset !== "python") || !main.State.Running) return null;
  const vhost = podVhost(pod, main, network);
  return vhost ? new StandbyRoute(ingress, vhost) : null;
}

/** The listening ports of the pod's network namespace, read on the host; null when unreadable. */
async function namespacePorts(pid: number): Promise<Set<number> | null> {
  if (!pid) return null;
  const tables = await Promise.all(
    ["tcp", "tcp6"].map((t) => readBoundedFile(`/proc/${pid}/net/${t}`, 4 * 1024 * 1024)),
  );
  if (tables.every((t) => t === null)) return null;
  return new Set(tables.flatMap((t) => (t ? listeningPorts(t) : [])));
}

/** What the pod's namespace listens on before a candidate starts (the wait compares against it). */
export interface StandbyBaseline {
  pid: number;
  ports: Set<number> | null;
}

/** The namespace's listeners now; null when the standby port is taken (then it is not for us). */
export async function standbyBaseline(
  main: ContainerInspectInfo,
  ip: string,
): Promise<StandbyBaseline | null> {
  const pid = main.State.Pid ?? 0;
  const ports = await namespacePorts(pid);
  if (ports?.has(STANDBY_PORT) || (!ports && (await waitForPort(ip, STANDBY_PORT, 50)))) return null;
  return { pid, ports };
}

/** A candidate process on the standby port in the build container. */
export interface StandbyCandidate {
  /** resolves when its process ended (it exited, or was stopped) */
  exited: Promise<unknown>;
}

/**
 * Start the candidate as an exec of its own in the build container (when the build's exec did not
 * start it: a rollback). `argv` runs ./switch.ts CANDIDATE_RUN; the env is the pod's, PORT the standby.
 */
export async function startOnStandby(
  docker: DockerClient,
  box: string,
  main: ContainerInspectInfo,
  argv: string[],
): Promise<StandbyCandidate> {
  const env = (main.Config.Env ?? []).filter((e) => !e.startsWith("PORT="));
  const exec = await docker.getContainer(box).exec({
    Cmd: argv,
    Env: [...env, `PORT=${STANDBY_PORT}`],
    User: "1000:1000",
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
  });
  const started = (await exec.start({ Detach: true })) as unknown as NodeJS.ReadableStream | undefined;
  started?.resume();
  const exited = (async () => {
    for (;;) {
      const info = await exec.inspect().catch(() => null);
      if (!info?.Running) return;
      await new Promise((r) => setTimeout(r, CHECK_EVERY_MS));
    }
  })();
  return { exited };
}

export type StandbyOutcome =
  /** the new release answers on the standby port */
  | { kind: "answers" }
  /** give it a container of its own (./switch.ts): why */
  | { kind: "container"; why: string }
  /** it listens, but not on PORT (and not on the pod's port) */
  | { kind: "port_mismatch"; ports: number[] }
  /** it never listened within the start timeout */
  | { kind: "timeout" };

/**
 * Wait until the candidate answers on the standby port, exits, takes another port or runs out of
 * time. A candidate that does not answer is stopped before this returns.
 */
export async function awaitStandby(w: {
  docker: DockerClient;
  box: string;
  ip: string;
  /** the pod's own port */
  port: number;
  baseline: StandbyBaseline;
  candidate: StandbyCandidate;
  startTimeoutMs: number;
  signal?: AbortSignal;
}): Promise<StandbyOutcome> {
  let exited = false;
  void w.candidate.exited.finally(() => {
    exited = true;
  });
  const stop = () => stopCandidate(w.docker, w.box);
  const before = w.baseline.ports;
  const deadline = Date.now() + w.startTimeoutMs;
  let foreign: number[] = [];
  while (Date.now() < deadline && !w.signal?.aborted) {
    if (await waitForPort(w.ip, STANDBY_PORT, CHECK_EVERY_MS, w.signal)) return { kind: "answers" };
    if (exited) {
      await stop();
      return { kind: "container", why: "it exited on the standby port" };
    }
    const now = before ? await namespacePorts(w.baseline.pid) : null;
    foreign = now && before ? [...now].filter((p) => !before.has(p) && p !== STANDBY_PORT) : [];
    if (foreign.includes(w.port)) {
      await stop();
      return { kind: "container", why: `it took the pod's port ${w.port} instead of PORT` };
    }
  }
  await stop();
  return foreign.length > 0 ? { kind: "port_mismatch", ports: foreign } : { kind: "timeout" };
}

/** End the candidate's process group in the build container (TERM, then KILL a second later). */
export async function stopCandidate(docker: DockerClient, box: string): Promise<void> {
  await execInContainer(
    docker,
    box,
    [
      "/bin/sh",
      "-c",
      `p=$(cat ${CANDIDATE_PID_FILE} 2>/dev/null) || exit 0
case "$p" in ''|*[!0-9]*) exit 0 ;; esac
kill -TERM -- "-$p" 2>/dev/null || exit 0
i=0; while kill -0 -- "-$p" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done
kill -KILL -- "-$p" 2>/dev/null; exit 0`,
    ],
    { signal: AbortSignal.timeout(10_000) },
  ).catch(() => undefined);
}
