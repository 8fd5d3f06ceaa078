/**
 * The SSH wire format of a public key blob (RFC 4251 §5): a sequence of `string`s, each a uint32
 * big-endian length and that many bytes; `mpint`s are strings holding a two's-complement big-endian
 * integer. A reader that never runs past the end: a truncated blob reads as `undefined`.
 */
export class WireReader {
  private offset = 0;

  constructor(private readonly bytes: Uint8Array) {}

  /** The next length-prefixed string, or undefined when the blob ends before it does. */
  string(): Uint8Array | undefined {
    if (this.offset + 4 > this.bytes.length) return undefined;
    const length = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.offset, 4).getUint32(0);
    const start = this.offset + 4;
    if (length > this.bytes.length - start) return undefined;
    this.offset = start + length;
    return this.bytes.subarray(start, this.offset);
  }

  /** The next string as text (key type and curve names are ASCII). */
  text(): string | undefined {
    const raw = this.string();
    return raw === undefined ? undefined : new TextDecoder().decode(raw);
  }

  /** True once every byte has been read: a key blob carries nothing after its last field. */
  get done(): boolean {
    return this.offset === this.bytes.length;
  }
}

/** Bits of a positive mpint, ignoring the leading zero byte(s) that keep its sign bit clear. */
export function mpintBits(mpint: Uint8Array): number {
  let i = 0;
  while (i < mpint.length && mpint[i] === 0) i++;
  const first = mpint[i];
  if (first === undefined) return 0;
  return (mpint.length - i - 1) * 8 + (32 - Math.clz32(first));
}

/** A negative mpint has its top bit set; an empty one is zero. */
export const isPositiveMpint = (mpint: Uint8Array): boolean =>
  mpint.length > 0 && ((mpint[0] ?? 0) & 0x80) === 0 && mpintBits(mpint) > 0;
