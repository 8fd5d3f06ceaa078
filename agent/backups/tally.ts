import { createHash } from "node:crypto";
import { once } from "node:events";
import { type Readable, Transform, type TransformCallback, type Writable } from "node:stream";

/**
 * Bytes passed on as they come, counted and hashed on the way (SHA-256, hex), so an archive is
 * never held whole to learn what it is. `gate`, when given, holds the end of the stream until it
 * settles: a producer that fails after its last byte (tar's exit status) then breaks the stream
 * rather than letting it end as if it were complete.
 */
export class Tally extends Transform {
  bytes = 0;
  private readonly hash = createHash("sha256");
  private digest: string | null = null;

  constructor(private readonly gate?: () => Promise<void>) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.digest = this.hash.digest("hex");
    if (!this.gate) {
      callback();
      return;
    }
    this.gate().then(
      () => callback(),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
    );
  }

  /** the hex SHA-256 of every byte, once the stream has ended (null before) */
  get sha256(): string | null {
    return this.digest;
  }
}

/**
 * Read `source` to its end into `dest` with backpressure while `dest` is wanted; once `stopped`
 * settles (the process reading it exited, maybe early: a refused archive) the rest is still read
 * and dropped, so that a Tally in front has counted and hashed every byte. Ends `dest` at the end.
 */
export async function pumpAll(source: Readable, dest: Writable, stopped: Promise<unknown>): Promise<void> {
  let gone = false;
  const stop = stopped.then(
    () => {
      gone = true;
    },
    () => {
      gone = true;
    },
  );
  dest.on("error", () => {
    gone = true;
  });
  for await (const chunk of source) {
    if (gone || dest.destroyed || dest.writableEnded) continue;
    if (!dest.write(chunk)) await Promise.race([once(dest, "drain").catch(() => undefined), stop]);
  }
  if (!gone && !dest.destroyed) dest.end();
}
