import type { Socket } from "node:net";
import { constants } from "node:os";
import type { Duplex, Readable, Writable } from "node:stream";
import { PassThrough, Transform, type TransformCallback } from "node:stream";
import { CappedBytes } from "./capped";
import type { DockerClient } from "./client";
import { FrameParser, STDERR, STDOUT } from "./frames";
import { HOME } from "./naming";
import { AGENT_PATH_ENV, SH } from "./pod-bin";
import type { RuncContainers } from "./runc";

/**
 * A process in a pod's container for payloads too large to hold in memory (file uploads and
 * downloads, ZIP deploys): stdin is piped from a Readable and stdout comes back as a Readable, both
 * with backpressure end to end (a slow reader blocks the process's writes). Only stderr is
 * collected, capped; whoever reads stdout streams it on or keeps a capped part of it. Every process
 * runs under AGENT_PATH (./pod-bin.ts): these are always the agent's own scripts. execInContainer
 * (./exec.ts) stays the simpler choice for small outputs.
 */

export interface StreamExecOptions {
  /** the container's id when the caller knows it (one engine round trip less) */
  id?: string;
  user?: string;
  workingDir?: string;
  /** piped to the process's stdin, which is closed when it ends (destroyed if it fails) */
  stdin?: Readable;
  /**
   * Instead of `stdin`: the process's stdin is a pipe whose other end comes back as
   * `StreamedExec.inlet`, for another child of this agent to write into (a `spawn` stdio entry;
   * then destroy this agent's copy, or the process never sees the end). Through `runc exec` the
   * pipe is a passed descriptor (`--preserve-fds`, after fd 3), made the process's stdin by a `sh`
   * in front of it: neither runc (which copies what comes on its own stdin) nor this agent reads a
   * byte. The engine's exec has no such pipe: `inlet` is then undefined and `stdin` is handed back
   * as with `openStdin`.
   */
  inlet?: boolean;
  /**
   * Hand the process's stdin back as `StreamedExec.stdin` for the caller to write and end (instead
   * of `stdin`): a source that is only known once the process runs is piped in without a stream in
   * between.
   */
  openStdin?: boolean;
  /**
   * Give the process a pipe from this agent as fd 3, handed back as `StreamedExec.fd3` (only by
   * `runc exec`: the engine's exec has no such pipe, and `fd3` is then undefined).
   */
  fd3?: boolean;
  signal?: AbortSignal;
  /** keep at most this many bytes of stderr (default 64 KiB) */
  maxStderrBytes?: number;
}

export interface StreamedExec {
  /** the process's stdout; the caller must consume it (or `resume()` it) or the process stalls */
  stdout: Readable;
  /** with `openStdin`: the process's stdin, ended by the caller (a failed source must `abort` instead) */
  stdin?: Writable;
  /** with `fd3`, where this host has it: the process's fd 3 */
  fd3?: Writable;
  /** with `inlet`, where this host has it: the write end of the process's stdin (see `inlet`) */
  inlet?: Socket;
  /** the exit code and the head of stderr, once the engine's stream ended */
  done: Promise<{ exitCode: number; stderr: string }>;
  /** tear the connection down (the process sees EOF and broken pipes, then exits) */
  abort(reason?: Error): void;
}

/** Starts a streamed process in a container, by whichever way this host has (see `streamExecutor`). */
export type StreamExecutor = (
  containerName: string,
  argv: string[],
  opts?: StreamExecOptions,
) => Promise<StreamedExec>;

/**
 * `runc exec` when runc knows the container on this host (./runc.ts: the bytes skip the engine's
 * copies), else `docker exec`. A container that is not running fails as the engine's exec does (409).
 */
export function streamExecutor(docker: DockerClient, runc: RuncContainers | null): StreamExecutor {
  return async (containerName, argv, opts = {}) => {
    const id = runc ? await runc.idOf(containerName, opts.id) : null;
    return id && runc
      ? runcExecStream(runc, id, argv, opts)
      : engineExecStream(docker, containerName, argv, opts);
  };
}

/** The engine's exec: stdin and stdout travel the hijacked connection, multiplexed. */
async function engineExecStream(
  docker: DockerClient,
  containerName: string,
  argv: string[],
  opts: StreamExecOptions = {},
): Promise<StreamedExec> {
  const openStdin = opts.openStdin === true || opts.inlet === true;
  const withStdin = opts.stdin !== undefined || openStdin;
  const exec = await docker.getContainer(containerName).exec({
    Cmd: argv,
    Env: [AGENT_PATH_ENV],
    User: opts.user ?? "1000:1000",
    WorkingDir: opts.workingDir,
    AttachStdin: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const socket = (await exec.start({ hijack: true, stdin: withStdin })) as unknown as Duplex;
  const demux = new Demux(opts.maxStderrBytes ?? 64 * 1024);

  const ended = new Promise<void>((resolve, reject) => {
    socket.once("end", resolve);
    socket.once("close", resolve);
    socket.once("error", reject);
  });
  socket.on("error", (err) => demux.destroy(err));
  socket.pipe(demux);

  if (opts.stdin) {
    const stdin = opts.stdin;
    // A hijacked stream is a duplex socket: `pipe` ends it (a half-close the process sees as EOF)
    // when the source ends. A failed source must not look like an end: the socket is torn down.
    stdin.once("error", (err) => socket.destroy(err));
    stdin.pipe(socket);
  }
  const onAbort = () => {
    const reason = opts.signal?.reason ?? new Error("aborted");
    socket.destroy(reason instanceof Error ? reason : new Error(String(reason)));
  };
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener("abort", onAbort, { once: true });

  const done = (async () => {
    try {
      await ended;
      // The stream can end a moment before the engine records the exit code: poll briefly.
      for (let i = 0; ; i++) {
        const info = await exec.inspect();
        if (!info.Running && info.ExitCode !== null)
          return { exitCode: info.ExitCode, stderr: demux.stderr() };
        if (opts.signal?.aborted) throw opts.signal.reason ?? new Error("aborted");
        await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** i, 100)));
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
    }
  })();
  // The caller may learn of a failure from `stdout` first; `done` must not then be unhandled.
  done.catch(() => undefined);
  quietErrors(demux);
  return {
    stdout: demux,
    ...(openStdin ? { stdin: socket } : {}),
    done,
    abort: (reason) => socket.destroy(reason),
  };
}

/** `runc exec`: the process's stdio are this agent's pipes. */
function runcExecStream(
  runc: RuncContainers,
  id: string,
  argv: string[],
  opts: StreamExecOptions,
): StreamedExec {
  const extraFds = (opts.fd3 ? 1 : 0) + (opts.inlet ? 1 : 0);
  // the inlet is the last passed descriptor: fd 3, or fd 4 after the verdict pipe
  const inletFd = 2 + extraFds;
  const command = opts.inlet ? [SH, "-c", `exec "$@" <&${inletFd} ${inletFd}<&-`, "sh", ...argv] : argv;
  // runc adds --env to the container's own environment, later entries winning: PATH is replaced.
  const child = runc.spawn(id, command, {
    user: opts.user ?? "1000:1000",
    cwd: opts.workingDir ?? HOME,
    env: [AGENT_PATH_ENV],
    extraFds,
  });
  const inlet = opts.inlet ? (child.stdio[inletFd] as Socket) : undefined;
  inlet?.on("error", () => undefined); // the process may exit before every byte was written
  const fd3 = opts.fd3 ? (child.stdio[3] as Writable) : undefined;
  fd3?.on("error", () => undefined); // the process may exit without reading it
  // Piped at once into a stream of this agent's: once runc exits, Node resumes its stdout if nothing
  // reads it yet, dropping the bytes, and a caller may start reading later (a service backup's dump
  // is piped into a second process, started once the first one runs). Bounded: past the stream's
  // buffer runc's stdout is paused, so the process waits on its pipe.
  const out = child.stdout as Readable;
  const stdout = quietErrors(new PassThrough());
  out.on("error", (err) => stdout.destroy(err));
  out.pipe(stdout);
  const stderr = new CappedBytes(opts.maxStderrBytes ?? 64 * 1024);
  child.stderr?.on("data", stderr.push);
  // runc forwards the signals it gets to the process (under `timeout`, to its whole group); its
  // pipes are closed too, so nothing waits on a reader or writer that is gone.
  const abort = (reason?: Error) => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    child.stdin?.destroy();
    fd3?.destroy();
    inlet?.destroy();
    out.destroy();
    stdout.destroy(reason);
  };
  child.stdin?.on("error", () => undefined); // the process may exit without reading everything
  if (opts.stdin) {
    const stdin = opts.stdin;
    // A failed source must not look like an end (EOF): the process is stopped instead.
    stdin.once("error", (err) => abort(err));
    stdin.pipe(child.stdin as NodeJS.WritableStream);
  } else if (!opts.openStdin) {
    child.stdin?.end();
  }
  const onAbort = () => {
    const reason = opts.signal?.reason;
    abort(reason instanceof Error ? reason : new Error(String(reason ?? "aborted")));
  };
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  const done = new Promise<{ exitCode: number; stderr: string }>((resolve, reject) => {
    child.once("error", reject);
    // "close": the exit status and every byte of stderr are in
    child.once("close", (code, signal) => {
      opts.signal?.removeEventListener("abort", onAbort);
      resolve({
        exitCode: code ?? 128 + (signal ? constants.signals[signal] : 0),
        stderr: stderr.text(),
      });
    });
  });
  done.catch(() => undefined);
  return {
    stdout,
    ...(opts.openStdin ? { stdin: child.stdin as Writable } : {}),
    ...(fd3 ? { fd3 } : {}),
    ...(inlet ? { inlet } : {}),
    done,
    abort,
  };
}

/**
 * An abort destroys stdout with its reason, possibly before the caller has a listener on it (an
 * aborted signal given to the start, or one that fires while the caller awaits something else):
 * an `error` event nobody listens to would end the agent. What happened is also in `done`; a
 * caller that wants the error from the stream adds its own listener, which still gets it.
 */
function quietErrors<T extends Readable>(stream: T): T {
  stream.on("error", () => undefined);
  return stream;
}

/** The engine's multiplexed stream (./frames.ts) split into stdout, passed on as it comes, and stderr, kept up to a cap. */
class Demux extends Transform {
  private readonly frames = new FrameParser();
  private readonly errors: CappedBytes;

  constructor(maxStderr: number) {
    super();
    this.errors = new CappedBytes(maxStderr);
  }

  stderr(): string {
    return this.errors.text();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.frames.push(chunk, (type, payload) => {
      if (type === STDOUT) this.push(payload);
      else if (type === STDERR) this.errors.push(payload);
    });
    callback();
  }
}
