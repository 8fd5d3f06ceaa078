import { checkPodPath } from "../../shared/pod-paths";
import { EXEC_MAX_ARG_BYTES, EXEC_MAX_OUTPUT_BYTES } from "../../shared/protocol/inside";
import type { DockerClient } from "../docker/client";
import { execInContainer } from "../docker/exec";
import { HOME, podNames } from "../docker/naming";
import { SH, TIMEOUT } from "../docker/pod-bin";
import { inspectContainer } from "../docker/resources";
import type { RuncContainers } from "../docker/runc";
import { AgentError } from "../errors";
import { fitPair } from "./budget";
import type { ExecHelpers, HelperOutcome } from "./exec-helper";

/**
 * The command runner: argv as pod_user in the running container, never through a shell.
 *
 * The process runs under coreutils `timeout`, which makes itself a process-group leader and on
 * expiry sends TERM to the whole group (KILL 5 s later), so a `sh -c` with children dies entirely;
 * it exits 124 (137 after the KILL). A tiny fixed `sh` prologue changes into the workdir first and
 * then runs timeout with the user's argv as positional arguments: it is never parsed by a shell.
 * The wrapper is absolute (`/bin/sh`, `/usr/bin/timeout`); the user's argv is looked up on the pod's
 * own PATH (`podPath`: `~/.npm-global/bin` first in Node.js pods), as in their SSH session.
 *
 * Output: each stream keeps its first EXEC_MAX_OUTPUT_BYTES; both together also stay within the
 * result's JSON budget (see ./budget.ts: binary output can grow sixfold as JSON). What is dropped
 * is counted in a marker at the end of the stream.
 *
 * Where runc knows the running container on this host, the pod's command helper starts the process
 * (./exec-helper.ts: one `runc exec` per pod, then a fork in the pod per command, with the same
 * `timeout`, workdir check and output rules); a helper that could not start falls back to one
 * `runc exec` of the `sh` prologue below per command, and a host without runc's state to the engine's
 * exec (no exec create/start/inspect round trips through the engine on the runc paths:
 * ../docker/runc.ts). Every way it is the container's own user namespace, cgroups, capabilities,
 * no_new_privs, seccomp profile and environment; the user is pod_user (1000:1000) and PATH the pod's
 * own, as the engine's exec gives it.
 */

export const DEFAULT_WORKDIR = `${HOME}/app`;
const KILL_AFTER_S = 5;
/** exit status of the prologue when the workdir cannot be entered; tagged on stderr to be sure */
const NO_WORKDIR = 125;
const NO_WORKDIR_TAG = "podhost-exec: workdir";
/**
 * timeout is not exec'd: the shell waits for it and writes its status on fd 3 where there is one (the
 * `runc exec` path, see RuncContainers.run: a child left in the background then cannot hold the
 * answer up); the command itself never sees fd 3.
 */
const PROLOGUE = `cd -- "$1" 2>/dev/null || { echo "${NO_WORKDIR_TAG}" >&2; exit ${NO_WORKDIR}; }
shift
${TIMEOUT} -k ${KILL_AFTER_S} -- "$@" 3>&-
s=$?
{ echo "$s" >&3; } 2>/dev/null
exit "$s"`;

export interface CommandRun {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
}

export const truncationMarker = (omitted: number) => `\n[output truncated: ${omitted} bytes omitted]`;

/** What the Worker checked already, checked again: the agent trusts no caller. */
export function checkCommand(command: string[], workdir: string | undefined): string {
  if (command.length === 0) throw new AgentError("bad_request", "command: must have at least 1 item(s)");
  for (const [i, arg] of command.entries()) {
    if (Buffer.byteLength(arg) > EXEC_MAX_ARG_BYTES)
      throw new AgentError("bad_request", `command.${i}: must be at most ${EXEC_MAX_ARG_BYTES} bytes`);
    if (arg.includes("\0")) throw new AgentError("bad_request", `command.${i}: must not contain NUL`);
  }
  if (workdir === undefined) return DEFAULT_WORKDIR;
  const checked = checkPodPath(workdir);
  if (!checked.ok) throw new AgentError("bad_request", `workdir: ${checked.reason}`);
  return checked.path;
}

export async function runCommand(
  docker: DockerClient,
  runc: RuncContainers | null,
  helpers: ExecHelpers | null,
  prefix: string,
  pod: string,
  q: { command: string[]; workdir?: string; timeoutS: number },
  signal: AbortSignal,
): Promise<CommandRun> {
  const workdir = checkCommand(q.command, q.workdir);
  const container = podNames(prefix, pod).container;
  // runc's id of the running container (cached: no engine call); null: ask the engine what is wrong
  const id = runc ? await runc.idOf(container).catch(() => null) : null;
  if (!id) await checkRunning(docker, pod, container);

  const argv = [SH, "-c", PROLOGUE, "sh", workdir, String(q.timeoutS), ...q.command];
  // The backstop if even KILL does not end it (a process stuck in the kernel): stop waiting.
  const backstop = AbortSignal.timeout((q.timeoutS + KILL_AFTER_S + 5) * 1000);
  const options = {
    maxOutputBytes: EXEC_MAX_OUTPUT_BYTES,
    signal: AbortSignal.any([signal, backstop]),
  };
  const started = Date.now();
  const noWorkdir = () =>
    new AgentError("bad_request", `workdir: ${workdir} is not a directory the pod user can enter`);
  let r: Awaited<ReturnType<typeof execInContainer>>;
  let helped: HelperOutcome | undefined;
  try {
    helped =
      id && helpers
        ? await helpers.run(id, { command: q.command, workdir, timeoutS: q.timeoutS, ...options })
        : undefined;
    if (helped?.kind === "no-workdir") throw noWorkdir();
    r =
      helped?.kind === "done"
        ? helped.result
        : id && runc
          ? // no --env: the container's own environment, PATH included, as the engine's exec keeps it
            await runc.run(id, argv, { ...options, user: "1000:1000", cwd: HOME, statusFd: true })
          : await execInContainer(docker, container, argv, { ...options, workingDir: HOME, podPath: true });
  } catch (err) {
    // the helper ended mid-command because the container stopped: as the engine says it
    if (id && runc && err instanceof AgentError && err.code === "unavailable" && !(await runc.has(id)))
      await checkRunning(docker, pod, container);
    if (!backstop.aborted) throw err;
    return { exitCode: null, stdout: "", stderr: "", durationMs: Date.now() - started, timedOut: true };
  }
  const durationMs = Date.now() - started;
  // the command went the old way: the pod's helper starts now, for the next ones
  if (id && helpers && helped?.kind === "not-started" && r.exitCode !== NO_WORKDIR && (await runc?.has(id)))
    helpers.start(id);
  // runc could not start the process because the container stopped meanwhile: as the engine says it
  if (id && runc && r.exitCode !== 0 && !(await runc.has(id))) await checkRunning(docker, pod, container);
  if (r.exitCode === NO_WORKDIR && r.stderr.startsWith(NO_WORKDIR_TAG)) throw noWorkdir();
  const timedOut = (r.exitCode === 124 || r.exitCode === 137) && durationMs >= q.timeoutS * 1000 - 100;
  // Bytes past the raw cap are counted by the exec; what the JSON budget drops on top is added.
  const [stdout, stderr] = fitPair(r.stdout, r.stderr);
  const dropped = (kept: string, all: string, before = 0) =>
    before + Buffer.byteLength(all) - Buffer.byteLength(kept);
  const omitted = {
    stdout: dropped(stdout, r.stdout, r.omitted.stdout),
    stderr: dropped(stderr, r.stderr, r.omitted.stderr),
  };
  return {
    exitCode: r.exitCode,
    stdout: omitted.stdout ? stdout + truncationMarker(omitted.stdout) : stdout,
    stderr: omitted.stderr ? stderr + truncationMarker(omitted.stderr) : stderr,
    durationMs,
    timedOut,
  };
}

/** 404 without a container, 400 when it is not running */
async function checkRunning(docker: DockerClient, pod: string, container: string): Promise<void> {
  const info = await inspectContainer(docker, container);
  if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
  if (!info.State.Running) throw new AgentError("bad_request", "pod is not running; start it first");
}
