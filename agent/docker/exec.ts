import { PassThrough } from "node:stream";
import { CappedBytes } from "./capped";
import type { DockerClient } from "./client";
import { demuxStream } from "./frames";
import { AGENT_PATH_ENV } from "./pod-bin";

/** what an exec keeps of each stream unless the call says otherwise (see ./capped.ts) */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

export interface ExecResult {
  exitCode: number;
  stdout: string;
  /** stdout as it came (what `stdout` decodes), for callers that count bytes */
  stdoutBytes: Buffer;
  stderr: string;
  /** bytes dropped past `maxOutputBytes`, per stream (0 when nothing was) */
  omitted: { stdout: number; stderr: number };
}

export interface ExecOptions {
  user?: string;
  workingDir?: string;
  /** more variables; PATH is AGENT_PATH (./pod-bin.ts) unless `podPath` */
  env?: string[];
  /**
   * Keep the pod's own PATH (the image's, `~/.npm-global/bin` first) instead of AGENT_PATH: only
   * for what runs as the user's code on purpose (the command runner, reload's installs).
   */
  podPath?: boolean;
  /** written to the process's stdin, which is then closed */
  stdin?: string | Buffer;
  signal?: AbortSignal;
  /**
   * keep at most this many bytes of each stream (the head; default DEFAULT_MAX_OUTPUT_BYTES); the
   * rest is read, counted in `omitted` and dropped
   */
  maxOutputBytes?: number;
}

/**
 * Run `argv` in a running container (never a shell string built from input: a caller that needs a
 * shell passes `["/bin/bash", "-c", script, "--", ...args]` with the input as positional args).
 * Resolves with the exit code and both streams, whatever the exit code; each stream is capped
 * (`maxOutputBytes`), whatever the process prints.
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
    Env: opts.podPath ? opts.env : [AGENT_PATH_ENV, ...(opts.env ?? [])],
    AttachStdin: opts.stdin !== undefined,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = await exec.start({ hijack: true, stdin: opts.stdin !== undefined });
  const out = new CappedBytes(opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const err = new CappedBytes(opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
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
          stdoutBytes: out.bytes(),
          stderr: err.text(),
          omitted: { stdout: out.omitted, stderr: err.omitted },
        };
      }
      if (opts.signal?.aborted) throw opts.signal.reason ?? new Error("aborted");
      await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** i, 100)));
    }
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
  }
}
