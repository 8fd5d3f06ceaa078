import type { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { fullDisk, fullDiskReason } from "../disk/full";
import { CappedBytes } from "../docker/capped";
import { dockerStatus } from "../docker/client";
import type { StreamExecutor, StreamedExec } from "../docker/exec-stream";
import { HOME, podNames } from "../docker/naming";
import { SH, TIMEOUT } from "../docker/pod-bin";
import { AgentError } from "../errors";

/**
 * How every file operation reaches the pod: a fixed `sh` script run as pod_user (uid 1000) in the
 * pod's running container (by `runc exec` where this host can, else `docker exec`: see
 * ../docker/exec-stream.ts), the caller's paths passed as positional arguments
 * (never parsed by a shell), under coreutils `timeout` so nothing outlives its op. Both by absolute
 * path, and the tools the scripts name resolve on the agent's fixed PATH (../docker/pod-bin.ts). Whatever a path
 * resolves to, symlinks included, is resolved by the kernel inside the pod for that user: a link
 * to /etc/shadow is "permission denied", a link to another pod's volume path names a path in this
 * pod's own filesystem.
 *
 * Files need a running pod (the same 400 as the command runner): /var/www and /tmp exist only in
 * the running container, and a stopped pod's home is not worth a second code path.
 */

export const NOT_RUNNING = "pod is not running; start it first";
const KILL_AFTER_S = 5;
/** stdout kept by `runFileScript` (listings); more is reported through `omitted` */
const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;

/** exit statuses the scripts use to say what they found (above what the tools themselves use) */
export const EXIT = {
  missing: 3,
  isDir: 4,
  notDir: 5,
  exists: 6,
  tooLarge: 7,
  shortWrite: 8,
  notRegular: 10,
  timedOut: 124,
} as const;

const timeoutArgv = (seconds: number, script: string, args: string[]) => [
  TIMEOUT,
  "-k",
  String(KILL_AFTER_S),
  String(seconds),
  SH,
  "-c",
  script,
  "sh",
  ...args,
];

const notRunning = (err: unknown) => dockerStatus(err) === 409;

export interface ScriptRun {
  exitCode: number;
  stdout: string;
  stderr: string;
  omitted: number;
}

/** Run `script` with `args` ($1, $2, …) as pod_user; small outputs only. */
export async function runFileScript(
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  script: string,
  args: string[],
  opts: { timeoutS: number; signal?: AbortSignal },
): Promise<ScriptRun> {
  const run = await streamFileScript(exec, prefix, pod, script, args, opts);
  const out = new CappedBytes(MAX_OUTPUT_BYTES);
  run.stdout.on("data", out.push);
  // Every byte of stdout is in once it ended; a broken stream is reported by `done`.
  const drained = finished(run.stdout).catch(() => undefined);
  const { exitCode, stderr } = await run.done;
  await drained;
  return { exitCode, stdout: out.text(), stderr, omitted: out.omitted };
}

/** Run `script` as pod_user with a streamed stdin and/or stdout (see ../docker/exec-stream.ts). */
export async function streamFileScript(
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  script: string,
  args: string[],
  opts: {
    timeoutS: number;
    signal?: AbortSignal;
    stdin?: Readable;
    openStdin?: boolean;
    inlet?: boolean;
    fd3?: boolean;
  },
): Promise<StreamedExec> {
  try {
    return await exec(podNames(prefix, pod).container, timeoutArgv(opts.timeoutS, script, args), {
      workingDir: HOME,
      stdin: opts.stdin,
      openStdin: opts.openStdin,
      inlet: opts.inlet,
      fd3: opts.fd3,
      signal: opts.signal,
    });
  } catch (err) {
    if (notRunning(err)) throw new AgentError("bad_request", NOT_RUNNING);
    throw err;
  }
}

/**
 * A failed file tool's stderr as an AgentError. Permission problems are 403 and never echo the
 * tool's words (they may name where a symlink points); the rest carry the first line of stderr,
 * which names only paths of the pod's own filesystem.
 */
export function fileFailure(what: string, exitCode: number, stderr: string): AgentError {
  const line = stderr.trim().split("\n")[0]?.slice(0, 300) ?? "";
  if (exitCode === EXIT.timedOut || exitCode === 137)
    return new AgentError("unavailable", `${what}: timed out in the pod`);
  if (/Permission denied|Operation not permitted|Read-only file system/i.test(stderr))
    return new AgentError("forbidden", `${what}: permission denied (the pod's user may not do this)`);
  const full = fullDisk(stderr);
  if (full === "quota") return new AgentError("conflict", `${what}: ${fullDiskReason(full)}`);
  // the home's device is the host's pods' disk; /tmp is the pod's own tmpfs (its memory)
  if (full === "device")
    return new AgentError("conflict", `${what}: the disk is full (no space left on the device it is on)`);
  if (/into itself|subdirectory of itself/i.test(stderr))
    return new AgentError("bad_request", `${what}: the destination is inside the source`);
  if (/Not a directory/i.test(stderr))
    return new AgentError("bad_request", `${what}: a parent of the path is not a directory`);
  if (/File exists/i.test(stderr)) return new AgentError("conflict", `${what}: ${line}`);
  if (/No such file or directory/i.test(stderr))
    return new AgentError("bad_request", `${what}: a parent of the path does not exist`);
  if (/Too many levels of symbolic links|File name too long/i.test(stderr))
    return new AgentError("bad_request", `${what}: ${line}`);
  return new AgentError("internal", `${what} failed (exit status ${exitCode}): ${line}`);
}
