/**
 * SHA-256 of bytes as they pass, never held: workerd's native DigestStream takes the chunks one by
 * one. Each chunk is handed over as a copy (a DigestStream write may take the buffer it is given,
 * and the caller still needs its chunk).
 */
export class Sha256Counter {
  private readonly digest = new crypto.DigestStream("SHA-256");
  private readonly writer = this.digest.getWriter();
  bytes = 0;

  async update(chunk: Uint8Array): Promise<void> {
    this.bytes += chunk.byteLength;
    await this.writer.write(chunk.slice());
  }

  /** the hex digest of everything given; the counter is spent */
  async hex(): Promise<string> {
    await this.writer.close();
    return toHex(await this.digest.digest);
  }
}

export const toHex = (buffer: ArrayBuffer): string =>
  [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
