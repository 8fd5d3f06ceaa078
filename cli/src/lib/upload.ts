import { randomBytes } from "node:crypto";

/**
 * A multipart/form-data body of text fields and one file part, as a stream that reports how much of
 * it has been read (sent): the progress bar of an upload. The archive is held once; the stream hands
 * it out in 256 KiB slices.
 */
export function multipartStream(
  fields: Record<string, string>,
  file: { field: string; name: string; type: string; data: Uint8Array },
  onProgress: (sent: number, total: number) => void,
): { body: ReadableStream<Uint8Array>; contentType: string; length: number } {
  const boundary = `----podhost${randomBytes(12).toString("hex")}`;
  const enc = new TextEncoder();
  const head = enc.encode(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join("") +
      `--${boundary}\r\ncontent-disposition: form-data; name="${file.field}"; filename="${file.name}"\r\ncontent-type: ${file.type}\r\n\r\n`,
  );
  const tail = enc.encode(`\r\n--${boundary}--\r\n`);
  const parts = [head, file.data, tail];
  const total = head.byteLength + file.data.byteLength + tail.byteLength;
  const SLICE = 256 * 1024;
  let part = 0;
  let offset = 0;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const current = parts[part];
      if (!current) {
        controller.close();
        return;
      }
      const slice = current.subarray(offset, offset + SLICE);
      offset += slice.byteLength;
      if (offset >= current.byteLength) {
        part += 1;
        offset = 0;
      }
      sent += slice.byteLength;
      onProgress(sent, total);
      controller.enqueue(slice);
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, length: total };
}

/** A one-line progress bar on stderr when it is a terminal; nothing otherwise. */
export function progressBar(label: string, enabled: boolean) {
  const tty = enabled && Boolean(process.stderr.isTTY);
  let last = -1;
  return {
    update(done: number, total: number) {
      if (!tty) return;
      const pct = total ? Math.floor((done / total) * 100) : 100;
      if (pct === last) return;
      last = pct;
      const width = 30;
      const filled = Math.round((pct / 100) * width);
      process.stderr.write(
        `\r${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${pct}% of ${mb(total)}`,
      );
    },
    done() {
      if (tty && last >= 0) process.stderr.write("\n");
    },
  };
}

export const mb = (n: number) =>
  n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MB` : `${Math.ceil(n / 1024)} kB`;
