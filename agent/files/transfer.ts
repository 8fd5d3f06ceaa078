import { Transform, type TransformCallback } from "node:stream";
import type { StreamExecutor } from "../docker/exec-stream";
import { AgentError } from "../errors";
import type { RelayClient } from "../transfer/relay";
import { EXIT, fileFailure, streamFileScript } from "./run";

/**
 * File bytes between a pod and the control plane's relay (../transfer/relay.ts), streamed end to end
 * with backpressure: nothing here holds a whole file in memory, and nothing of it crosses the
 * control WebSocket. A transfer that breaks off on either side tears down the pod's process too.
 */

export const TRANSFER_TIMEOUT_S = 280;

/**
 * `-f` after following links refuses directories, FIFOs (a read would hang), devices and sockets.
 * The file is opened once; its size is taken from that open file and printed as a header line,
 * then exactly that many bytes follow (a file growing meanwhile is cut there, one shrinking makes
 * the transfer fail rather than send a short file). `dd` moves them 1 MiB a read and a write, where
 * `head -c` wrote 8 KiB at a time: a 32 MB download was 4,000 writes into the agent's pipe and as
 * many reads on its side.
 */
const DOWNLOAD = `f=$1 max=$2
[ -e "$f" ] || exit ${EXIT.missing}
[ -d "$f" ] && exit ${EXIT.isDir}
[ -f "$f" ] || exit ${EXIT.notRegular}
exec 3<"$f"
s=$(stat -L -c %s /dev/fd/3) || exit 1
printf '%s\\n' "$s"
[ "$s" -le "$max" ] || exit ${EXIT.tooLarge}
exec dd bs=1M count="$s" iflag=count_bytes status=none <&3`;

export const needRelay = (client: RelayClient | undefined): RelayClient => {
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
  exec: StreamExecutor,
  prefix: string,
  pod: string,
  q: { path: string; relay: string; maxBytes: number; client: RelayClient | undefined },
  signal: AbortSignal,
): Promise<Download> {
  const client = needRelay(q.client);
  const run = await streamFileScript(exec, prefix, pod, DOWNLOAD, [q.path, String(q.maxBytes)], {
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
