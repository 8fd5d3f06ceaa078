/**
 * What the agent keeps of a pod's output: the first `max` bytes, the rest counted and dropped. A
 * pod decides how much it prints (a 2 GB log line, a planted binary that never stops), so no output
 * the agent collects may grow with it. Kept bytes are copied: a slice would pin the whole socket
 * read it came from, and many tiny slices could then hold far more than `max`.
 */
export class CappedBytes {
  private readonly kept: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  constructor(readonly max: number) {}

  /** bound, so that it can be handed to `on("data", …)` as it is */
  readonly push = (b: Buffer): void => {
    const room = Math.max(0, this.max - this.size);
    if (b.length > room) this.dropped += b.length - room;
    if (room === 0) return;
    const part = b.length > room ? b.subarray(0, room) : b;
    this.kept.push(Buffer.from(part));
    this.size += part.length;
  };

  bytes(): Buffer {
    return Buffer.concat(this.kept);
  }

  text(): string {
    return this.bytes().toString("utf8");
  }

  /** bytes that came past `max` */
  get omitted(): number {
    return this.dropped;
  }
}
