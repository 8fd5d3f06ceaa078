import { Transform, type TransformCallback } from "node:stream";
import type { DockerClient } from "../docker/client";
import { AgentError } from "../errors";
import type { RelayClient } from "../transfer/relay";
import { EXIT, fileFailure, streamFileScript } from "./run";

/**
 * File bytes between a pod and the control plane's relay (../transfer/relay.ts), streamed end to end
 * with backpressure: nothing here holds a whole file in memory, and nothing of it crosses the
 * control WebSocket. A transfer that breaks off on either side tears down the `docker exec` too.
 */

const TRANSFER_TIMEOUT_S = 280;

/**
 * `-f` after following links refuses directories, FIFOs (a read would hang), devices and sockets.
 * The file is opened once; its size is taken from that open file and printed as a header line,
 * then exactly that many bytes follow (a file growing meanwhile is cut there, one shrinking makes
 * the transfer fail rather than send a short file).
 */
const DOWNLOAD = `f=$1 max=$2
[ -e "$f" ] || exit ${EXIT.missing}
[ -d "$f" ] && exit ${EXIT.isDir}
[ -f "$f" ] || exit ${EXIT.notRegular}
exec 3<"$f"
s=$(stat -L -c %s /dev/fd/3) || exit 1
printf '%s\\n' "$s"
[ "$s" -le "$max" ] || exit ${EXIT.tooLarge}
exec head -c "$s" <&3`;

/**
 * A temp file beside the target, filled from stdin, checked for the expected size, then renamed
 * over the target (\`mv -T\`: a symlink at the path is replaced, never written through; a directory
 * there is refused). An existing file's mode is kept; a new file is 644.
 */
const UPLOAD = `f=$1 d=$2 n=$3
if [ -d "$f" ] && [ ! -L "$f" ]; then exit ${EXIT.isDir}; fi
if [ -e "$d" ] && [ ! -d "$d" ]; then exit ${EXIT.notDir}; fi
mkdir -p -- "$d" || exit 1
t=$(mktemp -- "$d/.upload-XXXXXX") || exit 1
trap 'rm -f -- "$t"' EXIT
cat >"$t" || exit 1
[ "$(stat -c %s -- "$t")" = "$n" ] || exit ${EXIT.shortWrite}
if [ -f "$f" ] && [ ! -L "$f" ]; then chmod --reference="$f" -- "$t"; else chmod 644 -- "$t"; fi || exit 1
mv -fT -- "$t" "$f" || exit 1
trap - EXIT`;

const needRelay = (client: RelayClient | undefined): RelayClient => {
  if (!client)
    throw new AgentError("unavailable", "this agent has no connection to the control plane's relay");
  return client;
};

export interface Download {
  found: boolean;
  size: number;
  /** false when the file is larger than allowed: nothing was sent */
  sent: boolean;
}

/**
 * Stream the file at `path` into the relay `relay`, unless it is larger than `maxBytes`; resolves
 * once the caller at the other end took every byte.
 */
export async function downloadFile(
  docker: DockerClient,
  prefix: string,
  pod: string,
  q: { path: string; relay: string; maxBytes: number; client: RelayClient | undefined },
  signal: AbortSignal,
): Promise<Download> {
  const client = needRelay(q.client);
  const run = await streamFileScript(docker, prefix, pod, DOWNLOAD, [q.path, String(q.maxBytes)], {
    timeoutS: TRANSFER_TIMEOUT_S,
    signal,
  });
  const body = new SizedBody(q.maxBytes);
  // Failures surface through the upload or the exit status; this only keeps them from being unhandled.
  body.on("error", () => undefined);
  run.stdout.on("error", (err) => body.destroy(err));
  run.stdout.pipe(body);
  try {
    const size = await body.size;
    if (size !== null && size <= q.maxBytes) {
      await client.upload(q.relay, body, size, signal);
    } else {
      body.resume();
    }
    const { exitCode, stderr } = await run.done;
    const what = `reading ${q.path}`;
    if (exitCode === EXIT.missing) return { found: false, size: 0, sent: false };
    if (exitCode === EXIT.isDir)
      throw new AgentError("bad_request", `path: ${q.path} is a directory; only files can be read`);
    if (exitCode === EXIT.notRegular)
      throw new AgentError("bad_request", `path: ${q.path} is not a regular file`);
    if (exitCode === EXIT.tooLarge && size !== null) return { found: true, size, sent: false };
    if (exitCode !== 0 || size === null) throw fileFailure(what, exitCode, stderr);
    return { found: true, size, sent: true };
  } catch (err) {
    run.abort();
    if (err instanceof ChangedWhileRead)
      throw new AgentError("conflict", `path: ${q.path} changed while it was read; try again`);
    throw err;
  }
}

/** Stream the relay's bytes (exactly `size`) into the file at `path`, atomically. */
export async function uploadFile(
  docker: DockerClient,
  prefix: string,
  pod: string,
  q: { path: string; parent: string; relay: string; size: number; client: RelayClient | undefined },
  signal: AbortSignal,
): Promise<void> {
  const incoming = await needRelay(q.client).fetch(q.relay, signal);
  if (incoming.size !== q.size) {
    incoming.body.destroy();
    throw new AgentError(
      "internal",
      `transfer ${q.relay} carries ${incoming.size} bytes, expected ${q.size}`,
    );
  }
  const run = await streamFileScript(docker, prefix, pod, UPLOAD, [q.path, q.parent, String(q.size)], {
    timeoutS: TRANSFER_TIMEOUT_S,
    signal,
    stdin: incoming.body,
  }).catch((err: unknown) => {
    incoming.body.destroy(); // nothing will read it: let the connection go
    throw err;
  });
  run.stdout.resume();
  // A script that stopped early (a directory at the path) left bytes unread: hang up on the relay,
  // so the caller's side learns of it rather than waits.
  const { exitCode, stderr } = await run.done.finally(() => incoming.body.destroy());
  const what = `writing ${q.path}`;
  if (exitCode === EXIT.isDir) throw new AgentError("bad_request", `path: ${q.path} is a directory`);
  if (exitCode === EXIT.notDir)
    throw new AgentError("bad_request", `path: ${q.parent} exists and is not a directory`);
  if (exitCode === EXIT.shortWrite)
    throw new AgentError("unavailable", `${what}: the upload was cut short; nothing was written`);
  if (exitCode !== 0) throw fileFailure(what, exitCode, stderr);
}

/**
 * The download script's output: a decimal size and a newline, then the file (nothing when the size
 * is over `max`). `size` resolves with that size (null when the script printed nothing); the
 * readable side is exactly the file's bytes, and ends with an error if fewer or more than `size`
 * arrive, so a short file is never passed off as whole.
 */
class ChangedWhileRead extends Error {}

class SizedBody extends Transform {
  readonly size: Promise<number | null>;
  private resolveSize: (size: number | null) => void = () => undefined;
  private header: Buffer[] = [];
  /** the body bytes still to come; null until the header line arrived */
  private due: number | null = null;

  constructor(private readonly max: number) {
    super();
    this.size = new Promise((resolve) => {
      this.resolveSize = resolve;
    });
    this.once("error", () => this.resolveSize(null));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    callback(this.accept(chunk) ?? null);
  }

  override _flush(callback: TransformCallback): void {
    if (this.due === null) this.resolveSize(null);
    const short = this.due !== null && this.due > 0;
    callback(short ? new ChangedWhileRead(`download: the file ended ${this.due} bytes early`) : null);
  }

  private accept(chunk: Buffer): Error | undefined {
    let body = chunk;
    if (this.due === null) {
      const newline = chunk.indexOf(0x0a);
      const held = this.header.reduce((n, b) => n + b.length, 0);
      if (held + (newline === -1 ? chunk.length : newline) > 32)
        return new Error("download: malformed size header");
      if (newline === -1) {
        this.header.push(chunk);
        return undefined;
      }
      const text = Buffer.concat([...this.header, chunk.subarray(0, newline)]).toString();
      if (!/^\d+$/.test(text)) return new Error("download: malformed size header");
      const size = Number(text);
      this.due = size > this.max ? 0 : size;
      this.resolveSize(size);
      body = chunk.subarray(newline + 1);
    }
    if (body.length > this.due) return new ChangedWhileRead("download: the file grew past its size");
    this.due -= body.length;
    if (body.length > 0) this.push(body);
    return undefined;
  }
}
