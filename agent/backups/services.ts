import type { Readable, Transform } from "node:stream";
import type { DumpEntry } from "../../shared/protocol/backups";
import type { DockerClient } from "../docker/client";
import type { StreamExecutor } from "../docker/exec-stream";
import { HOME } from "../docker/naming";
import { BASH, TIMEOUT } from "../docker/pod-bin";
import { whyItFailed } from "./pod-run";
import { Tally } from "./tally";

/**
 * A pod's managed service sidecars as backups see them: one container per service kind, running
 * the service image's own `svc-dump` (the database out on stdout), `svc-load` (a dump in on stdin,
 * into the running server) and `svc-verify` (a dump on stdin, into a scratch server that is thrown
 * away). The bytes go from one container's pipe into the other's, never onto the host's disk.
 */
export type ServiceKind = "postgresql" | "mysql" | "redis";

export interface ServiceSidecar {
  kind: ServiceKind;
  container: string;
}

const SVC_BIN = "/opt/podhost/bin";
export const SVC_DUMP = `${SVC_BIN}/svc-dump`;
export const SVC_LOAD = `${SVC_BIN}/svc-load`;
export const SVC_VERIFY = `${SVC_BIN}/svc-verify`;

/** a dump's member name in the archive, by kind */
export const DUMP_FILE: Record<ServiceKind, string> = {
  postgresql: "postgresql.sql",
  mysql: "mysql.sql",
  redis: "redis.rdb",
};

/** dumping or loading one database, at most */
export const SERVICE_TIMEOUT_S = 1800;

/** where a dump comes from: a process whose stdout is the dump */
export interface DumpSource {
  kind: ServiceKind;
  container: string;
  /** names it in a failure: `postgresql`, or a self-run server (./self-run-db.ts) */
  label: string;
  /** its member's name under databases/ */
  file: string;
  argv: string[];
  stdin?: () => Readable;
}

/** where a dump goes: a process that reads it on stdin and loads it */
export interface LoadTarget {
  kind: ServiceKind;
  container: string;
  label: string;
  argv: string[];
  /** what its stdin is made of, given the dump */
  stdin?: (dump: Readable) => Readable;
}

const timed = (argv: string[]) => [TIMEOUT, "-k", "5", String(SERVICE_TIMEOUT_S), ...argv];

/** a managed sidecar's `svc-dump` and `svc-load` */
export const sidecarSource = (s: ServiceSidecar): DumpSource => ({
  kind: s.kind,
  container: s.container,
  label: s.kind,
  file: DUMP_FILE[s.kind],
  argv: timed([SVC_DUMP]),
});
const sidecarTarget = (s: ServiceSidecar): LoadTarget => ({
  kind: s.kind,
  container: s.container,
  label: s.kind,
  argv: timed([SVC_LOAD]),
});

/**
 * `svc-dump` in the sidecar piped into a file of the pod's spool, written by pod_user in the pod
 * (so the dump counts against the pod's own disk). An empty or failing dump is a failure.
 */
export async function dumpServices(
  deps: { docker: DockerClient; exec: StreamExecutor },
  podContainer: string,
  sidecar: ServiceSidecar,
  dir: string,
  signal: AbortSignal,
): Promise<{ ok: true; entry: DumpEntry } | { ok: false; reason: string }> {
  const source = sidecarSource(sidecar);
  const piped = await pipeDump(deps, podContainer, source, dir, signal);
  if (!piped.ok) return piped;
  return { ok: true, entry: { kind: sidecar.kind, file: `databases/${source.file}`, bytes: piped.bytes } };
}

/** A dump's source piped into `<dir>/<file>`, written by pod_user in the pod; its byte count. */
export async function pipeDump(
  deps: { exec: StreamExecutor },
  podContainer: string,
  source: DumpSource,
  dir: string,
  signal: AbortSignal,
): Promise<{ ok: true; bytes: number } | { ok: false; reason: string }> {
  const timeout = AbortSignal.any([signal, AbortSignal.timeout((SERVICE_TIMEOUT_S + 30) * 1000)]);
  const dump = await deps.exec(source.container, source.argv, {
    signal: timeout,
    workingDir: "/",
    ...(source.stdin ? { stdin: source.stdin() } : {}),
  });
  const tally = new Tally();
  dump.stdout.on("error", (err) => tally.destroy(err));
  dump.stdout.pipe(tally);
  const write = await deps.exec(
    podContainer,
    timed([BASH, "-c", 'exec /bin/cat > "$1"', "bash", `${dir}/${source.file}`]),
    { workingDir: HOME, stdin: tally, signal: timeout },
  );
  // an abort destroys the streams with its reason: the exit status tells what happened
  write.stdout.on("error", () => undefined).resume();
  const [dumped, written] = await Promise.all([dump.done, write.done]);
  if (dumped.exitCode !== 0)
    return {
      ok: false,
      reason: `dumping ${source.label} failed (exit ${dumped.exitCode}): ${whyItFailed(dumped)}`,
    };
  if (written.exitCode !== 0)
    return {
      ok: false,
      reason: `writing the ${source.label} dump into the pod failed (exit ${written.exitCode}): ${whyItFailed(written)}`,
    };
  if (tally.bytes === 0) return { ok: false, reason: `the dump of ${source.label} is empty` };
  return { ok: true, bytes: tally.bytes };
}

/**
 * A dump in the pod (read by pod_user there) piped into `svc-load` in the pod's running sidecar of
 * its kind. The failure's one line, or null.
 */
export function loadService(
  deps: { exec: StreamExecutor },
  podContainer: string,
  sidecar: ServiceSidecar,
  dump: string,
  signal: AbortSignal,
  /** the bytes pass through it (./early-load.ts: the end held back until the restore may go on) */
  gate?: Transform,
): Promise<string | null> {
  return pipeLoad(deps, podContainer, sidecarTarget(sidecar), dump, signal, gate);
}

/** A dump in the pod piped into a load target. The failure's one line, or null. */
export async function pipeLoad(
  deps: { exec: StreamExecutor },
  podContainer: string,
  target: LoadTarget,
  dump: string,
  signal: AbortSignal,
  gate?: Transform,
): Promise<string | null> {
  const timeout = AbortSignal.any([signal, AbortSignal.timeout((SERVICE_TIMEOUT_S + 30) * 1000)]);
  const read = await deps.exec(podContainer, timed(["/bin/cat", "--", dump]), {
    workingDir: HOME,
    signal: timeout,
  });
  // an abort destroys the streams with its reason (also before the load below exists): the exit
  // statuses tell what happened
  read.stdout.on("error", () => undefined);
  let stdin: Readable = read.stdout;
  if (gate) {
    // a gate stopped (or the read failing) stops both ends: the load must not see an end
    read.stdout.on("error", (err) => gate.destroy(err));
    gate.on("error", () => read.abort());
    stdin = read.stdout.pipe(gate);
  }
  const load = await deps.exec(target.container, target.argv, {
    workingDir: "/",
    stdin: target.stdin ? target.stdin(stdin) : stdin,
    signal: timeout,
  });
  load.stdout.on("error", () => undefined).resume();
  const [r, l] = await Promise.all([read.done, load.done]);
  if (r.exitCode !== 0)
    return `reading the ${target.label} dump failed (exit ${r.exitCode}): ${whyItFailed(r)}`;
  if (l.exitCode !== 0)
    return `loading the ${target.label} dump failed (exit ${l.exitCode}): ${whyItFailed(l)}`;
  return null;
}
