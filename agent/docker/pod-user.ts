import { randomBytes } from "node:crypto";
import { PassThrough, Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { AgentError } from "../errors";
import { CappedBytes } from "./capped";
import { type DockerClient, dockerStatus, isNotFound } from "./client";
import { DEFAULT_MAX_OUTPUT_BYTES, type ExecResult, execInContainer } from "./exec";
import type { StreamExecutor } from "./exec-stream";
import { demuxStream } from "./frames";
import { HOME, helperName, LABEL_PREFIX, podNames } from "./naming";
import { AGENT_PATH_ENV, SH } from "./pod-bin";
import { inspectContainer, removeContainer } from "./resources";
import { POD_SECURITY_OPT } from "./seccomp";

/** marks the short-lived containers below (they carry no pod label, so inventory and events ignore them) */
export const LABEL_HELPER = "podhost.helper";

const MB = 1024 * 1024;

export interface PodUserRunOptions {
  /** written to the process's stdin, which is then closed */
  stdin?: string | Buffer;
  timeoutMs?: number;
  /** what is kept of each stream (default DEFAULT_MAX_OUTPUT_BYTES); see ExecOptions */
  maxOutputBytes?: number;
  /**
   * How to start the process when the pod runs: pass the agent's stream executor (runc exec where
   * the host can, ./exec-stream.ts) so stdin is the agent's own pipe; absent, the engine's exec.
   */
  exec?: StreamExecutor;
}

/**
 * `argv` reading exactly `bytes` bytes of input: `head -c` stops at the count and closes the pipe,
 * so the process sees its end of input whether or not the engine ever delivers the end of stdin
 * (through `docker exec` it now and then did not, and the write hung until its timeout).
 */
const withExactInput = (argv: string[], bytes: number) => [
  SH,
  "-c",
  'n=$1; shift; /usr/bin/head -c "$n" | "$@"',
  "sh",
  String(bytes),
  ...argv,
];

/**
 * Run `argv` as pod_user against the pod's home, whether or not the pod runs: `docker exec` in its
 * container when it runs, otherwise a throwaway container of the same image with only the home
 * volume mounted (no network, no capabilities, read-only root). Either way the files are touched by
 * uid 1000 inside the pod's own view of the filesystem, so a symlink the user planted in the home
 * (say `~/.ssh/authorized_keys -> /etc/shadow`) can only reach what pod_user could read anyway.
 * Both ways run under AGENT_PATH (./pod-bin.ts) and keep at most `maxOutputBytes` of each stream.
 */
export async function runAsPodUser(
  docker: DockerClient,
  prefix: string,
  pod: string,
  argv: string[],
  opts: PodUserRunOptions = {},
): Promise<ExecResult> {
  const names = podNames(prefix, pod);
  const info = await inspectContainer(docker, names.container);
  if (!info) throw new AgentError("not_found", `pod ${pod} has no container on this host`);
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const stdin = opts.stdin === undefined ? undefined : Buffer.from(opts.stdin);
  const run = stdin ? withExactInput(argv, stdin.length) : argv;
  if (info.State.Running) {
    try {
      if (opts.exec)
        return await runStreamed(opts.exec, names.container, run, stdin, timeoutMs, opts.maxOutputBytes);
      return await execInContainer(docker, names.container, run, {
        workingDir: HOME,
        stdin,
        signal: AbortSignal.timeout(timeoutMs),
        maxOutputBytes: opts.maxOutputBytes,
      });
    } catch (err) {
      // Stopped between the inspect and the exec: the helper below does the same job.
      if (dockerStatus(err) !== 409) throw err;
    }
  }
  return runInHelper(docker, prefix, pod, info.Image, run, { ...opts, stdin, timeoutMs });
}

/** Through the stream executor: stdin from a buffer into the process's pipe, stdout kept up to its cap. */
async function runStreamed(
  exec: StreamExecutor,
  container: string,
  argv: string[],
  stdin: Buffer | undefined,
  timeoutMs: number,
  maxOutputBytes = DEFAULT_MAX_OUTPUT_BYTES,
): Promise<ExecResult> {
  const run = await exec(container, argv, {
    workingDir: HOME,
    stdin: stdin ? Readable.from([stdin]) : undefined,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const out = new CappedBytes(maxOutputBytes);
  run.stdout.on("data", out.push);
  const drained = finished(run.stdout).catch(() => undefined);
  const { exitCode, stderr } = await run.done;
  await drained;
  return {
    exitCode,
    stdout: out.text(),
    stdoutBytes: out.bytes(),
    stderr,
    omitted: { stdout: out.omitted, stderr: 0 },
  };
}

async function runInHelper(
  docker: DockerClient,
  prefix: string,
  pod: string,
  image: string,
  argv: string[],
  opts: PodUserRunOptions & { timeoutMs: number },
): Promise<ExecResult> {
  const { stdin, timeoutMs } = opts;
  const names = podNames(prefix, pod);
  const name = helperName(names.container, `run-${randomBytes(4).toString("hex")}`);
  const withStdin = stdin !== undefined;
  const container = await docker.createContainer({
    name,
    Image: image,
    Cmd: argv,
    Env: [AGENT_PATH_ENV],
    User: "1000:1000",
    WorkingDir: HOME,
    Labels: { [LABEL_PREFIX]: prefix, [LABEL_HELPER]: pod },
    AttachStdin: withStdin,
    OpenStdin: withStdin,
    StdinOnce: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    NetworkDisabled: true,
    HostConfig: {
      NetworkMode: "none",
      CapDrop: ["ALL"],
      SecurityOpt: POD_SECURITY_OPT,
      ReadonlyRootfs: true,
      Tmpfs: { "/tmp": `rw,nosuid,nodev,size=${16 * MB}` },
      Memory: 128 * MB,
      MemorySwap: 128 * MB,
      PidsLimit: 32,
      LogConfig: { Type: "none", Config: {} },
      Mounts: [{ Type: "volume", Source: names.volume, Target: HOME, ReadOnly: false }],
    },
  });
  const timer = setTimeout(() => void removeContainer(docker, name).catch(() => undefined), timeoutMs);
  try {
    const stream = await container.attach({
      stream: true,
      stdin: withStdin,
      stdout: true,
      stderr: true,
      hijack: true,
    });
    const out = new CappedBytes(opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
    const err = new CappedBytes(opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
    const stdout = new PassThrough().on("data", out.push);
    const stderr = new PassThrough().on("data", err.push);
    demuxStream(stream, stdout, stderr);
    const ended = new Promise<void>((resolve) => {
      stream.on("end", resolve);
      stream.on("close", resolve);
      stream.on("error", () => resolve());
    });
    await container.start();
    if (withStdin) (stream as unknown as NodeJS.WritableStream).end(stdin);
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    await ended;
    return {
      exitCode: StatusCode,
      stdout: out.text(),
      stdoutBytes: out.bytes(),
      stderr: err.text(),
      omitted: { stdout: out.omitted, stderr: err.omitted },
    };
  } catch (e) {
    if (isNotFound(e))
      throw new AgentError("unavailable", `pod ${pod}: helper timed out after ${timeoutMs} ms`);
    throw e;
  } finally {
    clearTimeout(timer);
    await removeContainer(docker, name);
  }
}
