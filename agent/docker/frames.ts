import type { Readable, Writable } from "node:stream";

/**
 * The engine's multiplexed output (a container's logs or an exec's streams without a terminal):
 * frames of an 8-byte header — stream type (1 stdout, 2 stderr), 3 zero bytes, a big-endian payload
 * length — then the payload. The agent's one reader of that format; what happens to the payloads is
 * up to each caller (the SSH pump joins and pauses, the bulk exec passes stdout on and caps stderr).
 */

export const STDOUT = 1;
export const STDERR = 2;
const HEADER = 8;

export class FrameParser {
  private readonly head = Buffer.alloc(HEADER);
  private headLength = 0;
  private remaining = 0;
  private type = 0;

  /**
   * Read one chunk: `onPayload` gets every payload byte of it with its stream type, sliced out of
   * the chunk without copying, as soon as it is there (a frame split across chunks arrives in
   * several slices; headers split across chunks are put back together).
   */
  push(chunk: Buffer, onPayload: (type: number, payload: Buffer) => void): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining === 0) {
        const take = Math.min(HEADER - this.headLength, chunk.length - offset);
        chunk.copy(this.head, this.headLength, offset, offset + take);
        this.headLength += take;
        offset += take;
        if (this.headLength < HEADER) break;
        this.type = this.head.readUInt8(0);
        this.remaining = this.head.readUInt32BE(4);
        this.headLength = 0;
        continue;
      }
      const n = Math.min(this.remaining, chunk.length - offset);
      const payload = chunk.subarray(offset, offset + n);
      offset += n;
      this.remaining -= n;
      onPayload(this.type, payload);
    }
  }
}

/** Split `from` into `stdout` and `stderr` as it flows (no backpressure: for small outputs). */
export function demuxStream(
  from: NodeJS.ReadableStream | Readable,
  stdout: Writable,
  stderr: Writable,
): void {
  const frames = new FrameParser();
  from.on("data", (chunk: Buffer) =>
    frames.push(chunk, (type, payload) => {
      if (type === STDOUT) stdout.write(payload);
      else if (type === STDERR) stderr.write(payload);
    }),
  );
}

/** A whole buffer of frames (a log tail read at once): the payloads of both streams, in order. */
export function framePayloads(buf: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  new FrameParser().push(buf, (_type, payload) => parts.push(payload));
  return parts;
}
