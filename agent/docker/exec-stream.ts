import type { Duplex, Readable } from "node:stream";
import { Transform, type TransformCallback } from "node:stream";
import type { DockerClient } from "./client";

/**
 * `docker exec` for payloads too large to hold in memory (file uploads and downloads): stdin is
 * piped from a Readable and stdout comes back as a Readable, both with backpressure end to end
 * (a slow reader pauses the engine's socket, which blocks the process's writes). Only stderr is
 * collected, capped. execInContainer (./exec.ts) stays the simpler choice for small outputs.
 */

export interface StreamExecOptions {
  user?: string;
  workingDir?: string;
  /** piped to the process's stdin, which is closed when it ends (destroyed if it fails) */
  stdin?: Readable;
  signal?: AbortSignal;
  /** keep at most this many bytes of stderr (default 64 KiB) */
  maxStderrBytes?: number;
}

export interface StreamedExec {
  /** the process's stdout; the caller must consume it (or `resume()` it) or the process stalls */
  stdout: Readable;
  /** the exit code and the head of stderr, once the engine's stream ended */
  done: Promise<{ exitCode: number; stderr: string }>;
  /** tear the connection down (the process sees EOF and broken pipes, then exits) */
  abort(reason?: Error): void;
}

export async function execStream(
  docker: DockerClient,
  containerName: string,
  argv: string[],
  opts: StreamExecOptions = {},
): Promise<StreamedExec> {
  const withStdin = opts.stdin !== undefined;
  const exec = await docker.getContainer(containerName).exec({
    Cmd: argv,
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
  return { stdout: demux, done, abort: (reason) => socket.destroy(reason) };
}

/**
 * The engine's multiplexed stream (8-byte header: stream type, 3 zero bytes, big-endian length;
 * then the payload) split into stdout, passed on as it comes, and stderr, kept up to a cap.
 * Frame payloads are sliced out of the chunks without copying.
 */
class Demux extends Transform {
  private readonly head = Buffer.alloc(8);
  private headLength = 0;
  private remaining = 0;
  private type = 0;
  private readonly errChunks: Buffer[] = [];
  private errLength = 0;

  constructor(private readonly maxStderr: number) {
    super();
  }

  stderr(): string {
    return Buffer.concat(this.errChunks).toString("utf8");
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining === 0) {
        const take = Math.min(8 - this.headLength, chunk.length - offset);
        chunk.copy(this.head, this.headLength, offset, offset + take);
        this.headLength += take;
        offset += take;
        if (this.headLength < 8) break;
        this.type = this.head.readUInt8(0);
        this.remaining = this.head.readUInt32BE(4);
        this.headLength = 0;
        continue;
      }
      const n = Math.min(this.remaining, chunk.length - offset);
      const payload = chunk.subarray(offset, offset + n);
      offset += n;
      this.remaining -= n;
      if (this.type === 1) this.push(payload);
      else if (this.type === 2) this.keepStderr(payload);
    }
    callback();
  }

  private keepStderr(b: Buffer): void {
    const room = this.maxStderr - this.errLength;
    if (room <= 0) return;
    const part = b.length > room ? b.subarray(0, room) : b;
    this.errChunks.push(Buffer.from(part));
    this.errLength += part.length;
  }
}
