/**
 * Byte-sequence search over chunks of a stream (used by ./multipart.ts).
 */

/**
 * Finds a byte sequence in chunks with Boyer–Moore–Horspool: only the last byte of each window is
 * looked at until it matches, and the window then moves by how far that byte is from the needle's
 * end, so random bytes cost about one read per needle length. (Native `Uint8Array#indexOf` of the
 * delimiter's CR was measured slower in workerd: about 1 ms per MiB, plus ~0.25 µs a call.)
 * A matching last byte is followed by a comparison from the needle's start: the delimiter begins
 * with its only CR, so hostile bytes cannot make those comparisons overlap and cost more than linear.
 */
export class Needle {
  private readonly skip = new Uint8Array(256);

  constructor(readonly bytes: Uint8Array) {
    const last = bytes.length - 1;
    this.skip.fill(bytes.length);
    for (let i = 0; i < last; i++) this.skip[bytes[i] ?? 0] = last - i;
  }

  /**
   * Where the needle first occurs in `haystack` from `from` on, or else where a prefix of it ends
   * `haystack` (the rest may be in the next chunk); -1 if neither.
   */
  find(haystack: Uint8Array, from = 0): number {
    const { bytes, skip } = this;
    const last = bytes.length - 1;
    const lastByte = bytes[last];
    for (let end = from + last; end < haystack.length; ) {
      const byte = haystack[end] ?? 0;
      if (byte === lastByte) {
        const start = end - last;
        let k = 0;
        while (k < last && haystack[start + k] === bytes[k]) k++;
        if (k === last) return start;
      }
      end += skip[byte] ?? 1;
    }
    for (let start = Math.max(from, haystack.length - last); start < haystack.length; start++) {
      let k = 0;
      while (start + k < haystack.length && haystack[start + k] === bytes[k]) k++;
      if (start + k === haystack.length) return start;
    }
    return -1;
  }
}

/** whether `bytes` begins with `prefix` */
export function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}
