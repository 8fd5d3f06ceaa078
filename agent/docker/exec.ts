import { PassThrough } from "node:stream";
import type { DockerClient } from "./client";
import { demuxStream } from "./frames";

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** bytes dropped past `maxOutputBytes`, per stream (0 when nothing was) */
  omitted?: { stdout: number; stderr: number };
}

export interface ExecOptions {
  user?: string;
  workingDir?: string;
  env?: string[];
  /** written to the process's stdin, which is then closed */
  stdin?: string | Buffer;
  signal?: AbortSignal;
  /** keep at most this many bytes of each stream (the head); the rest is counted, not kept */
  maxOutputBytes?: number;
}

/**
 * Run `argv` in a running container (never a shell string built from input: a caller that needs a
 * shell passes `["bash", "-c", script, "--", ...args]` with the input as positional args).
 * Resolves with the exit code and both streams, whatever the exit code.
 */
export async function execInContainer(
  docker: DockerClient,
  containerName: string,
  argv: string[],
  opts: ExecOptions = {},
): Promise<ExecResult> {
  const container = docker.getContainer(containerName);
  const exec = await container.exec({
    Cmd: argv,
    User: opts.user ?? "1000:1000",
    WorkingDir: opts.workingDir,
    Env: opts.env,
    AttachStdin: opts.stdin !== undefined,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = await exec.start({ hijack: true, stdin: opts.stdin !== undefined });
  const out = capped(opts.maxOutputBytes);
  const err = capped(opts.maxOutputBytes);
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stdout.on("data", out.push);
  stderr.on("data", err.push);
  demuxStream(stream, stdout, stderr);

  const ended = new Promise<void>((resolve, reject) => {
    stream.on("end", resolve);
    stream.on("close", resolve);
    stream.on("error", reject);
  });
  if (opts.stdin !== undefined) {
    // A hijacked stream is a duplex socket: write stdin, then half-close so the process sees EOF.
    const sock = stream as unknown as NodeJS.WritableStream;
    sock.end(opts.stdin);
  }
  const onAbort = () => (stream as unknown as { destroy?: () => void }).destroy?.();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await ended;
    // The stream can end a moment before the engine records the exit code: poll briefly.
    for (let i = 0; ; i++) {
      const info = await exec.inspect();
      if (!info.Running && info.ExitCode !== null) {
        return {
          exitCode: info.ExitCode,
          stdout: out.text(),
          stderr: err.text(),
          omitted: { stdout: out.omitted(), stderr: err.omitted() },
        };
      }
      if (opts.signal?.aborted) throw opts.signal.reason ?? new Error("aborted");
      await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** i, 100)));
    }
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
  }
}

/** A byte sink keeping the first `max` bytes (all when unset) and counting the rest. */
function capped(max = Number.POSITIVE_INFINITY) {
  const kept: Buffer[] = [];
  let size = 0;
  let dropped = 0;
  return {
    push: (b: Buffer) => {
      const room = Math.max(0, max - size);
      if (b.length > room) dropped += b.length - room;
      if (room > 0) {
        const part = b.length > room ? b.subarray(0, room) : b;
        kept.push(part);
        size += part.length;
      }
    },
    text: () => Buffer.concat(kept).toString("utf8"),
    omitted: () => dropped,
  };
}
