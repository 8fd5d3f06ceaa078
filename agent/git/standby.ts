import type { ContainerInspectInfo } from "dockerode";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { listeningPorts, readBoundedFile } from "../docker/proc-net";
import { waitForPort } from "../docker/wait-port";
import { STANDBY_PORT } from "../ingress/vhost";

/**
 * The new release on the standby port. The build container shares the running pod's network
 * namespace (./build.ts), so an app started there on STANDBY_PORT answers at the pod's own address,
 * where the ingress's standby upstream already points (ingress/vhost.ts): no container to start,
 * no ingress reload. The ingress sends a request there only when the pod's port refuses it, which
 * is exactly while the pod's app restarts on the new release.
 *
 * An app that ignores PORT cannot bind the pod's port beside the serving app (or takes it when
 * nothing serves there) and is handed to the candidate container instead (./switch.ts), which gives
 * it a namespace of its own; so is one that exits, which the candidate container then classifies.
 */

/** where the candidate's shell writes its pid (= its process group: each exec is a session leader) */
const PID_FILE = "/tmp/podhost-candidate.pid";

/** how often the wait looks at the namespace's listening sockets and the candidate's exec */
const CHECK_EVERY_MS = 250;

export type StandbyStart =
  /** the new release answers on the standby port */
  | { kind: "answers" }
  /** give it a container of its own (./switch.ts): why */
  | { kind: "container"; why: string }
  /** it listens, but not on PORT (and not on the pod's port) */
  | { kind: "port_mismatch"; ports: number[] }
  /** it never listened within the start timeout */
  | { kind: "timeout" };

export interface StandbyCandidate {
  docker: DockerClient;
  /** the build container (in the pod's network namespace) */
  box: string;
  /** the running pod's container: its address, port, env and (host) pid */
  main: ContainerInspectInfo;
  ip: string;
  port: number;
  /** the candidate's argv (./switch.ts CANDIDATE_RUN), its port argument left to this module */
  argv: (port: number) => string[];
  startTimeoutMs: number;
  signal?: AbortSignal;
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

/**
 * Start the new release in the build container on the standby port and wait until it answers there,
 * exits, takes another port or runs out of time. A candidate that does not answer is stopped
 * before this returns.
 */
export async function startOnStandby(c: StandbyCandidate): Promise<StandbyStart> {
  const pid = c.main.State.Pid ?? 0;
  const before = await namespacePorts(pid);
  if (before?.has(STANDBY_PORT) || (!before && (await waitForPort(c.ip, STANDBY_PORT, 1))))
    return { kind: "container", why: `port ${STANDBY_PORT} is taken in the pod` };
  const env = (c.main.Config.Env ?? []).filter((e) => !e.startsWith("PORT="));
  const exec = await c.docker.getContainer(c.box).exec({
    Cmd: c.argv(STANDBY_PORT),
    Env: [...env, `PORT=${STANDBY_PORT}`],
    User: "1000:1000",
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
  });
  const started = (await exec.start({ Detach: true })) as unknown as NodeJS.ReadableStream | undefined;
  started?.resume();
  const stop = () => stopCandidate(c.docker, c.box);
  const deadline = Date.now() + c.startTimeoutMs;
  let foreign: number[] = [];
  while (Date.now() < deadline && !c.signal?.aborted) {
    if (await waitForPort(c.ip, STANDBY_PORT, CHECK_EVERY_MS, c.signal)) return { kind: "answers" };
    if (!(await exec.inspect()).Running) {
      await stop();
      return { kind: "container", why: "it exited on the standby port" };
    }
    const now = before ? await namespacePorts(pid) : null;
    foreign = now && before ? [...now].filter((p) => !before.has(p) && p !== STANDBY_PORT) : [];
    if (foreign.includes(c.port)) {
      await stop();
      return { kind: "container", why: `it took the pod's port ${c.port} instead of PORT` };
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
      `p=$(cat ${PID_FILE} 2>/dev/null) || exit 0
case "$p" in ''|*[!0-9]*) exit 0 ;; esac
kill -TERM -- "-$p" 2>/dev/null || exit 0
i=0; while kill -0 -- "-$p" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done
kill -KILL -- "-$p" 2>/dev/null; exit 0`,
    ],
    { signal: AbortSignal.timeout(10_000) },
  ).catch(() => undefined);
}

export { PID_FILE as CANDIDATE_PID_FILE };
