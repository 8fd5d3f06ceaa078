import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { CliError } from "./errors";

/** A file part's bytes: held in memory (a packed ZIP), or a file on disk read as it is sent. */
export type PartData = Uint8Array | { path: string; size: number };

/**
 * A multipart/form-data body of text fields and one file part, as a stream that reports how much of
 * it has been read (sent): the progress bar of an upload. Bytes in memory are handed out in 256 KiB
 * slices; a file on disk is read 256 KiB at a time as the request pulls, never held whole (a backup
 * archive may be gigabytes).
 */
export function multipartStream(
  fields: Record<string, string>,
  file: { field: string; name: string; type: string; data: PartData },
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
  const fileSize = file.data instanceof Uint8Array ? file.data.byteLength : file.data.size;
  const total = head.byteLength + fileSize + tail.byteLength;
  const chunks = slices(head, file.data, tail);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) {
        controller.close();
        return;
      }
      sent += next.value.byteLength;
      onProgress(sent, total);
      controller.enqueue(next.value);
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, length: total };
}

const SLICE = 256 * 1024;

async function* slices(head: Uint8Array, data: PartData, tail: Uint8Array): AsyncGenerator<Uint8Array> {
  yield head;
  if (data instanceof Uint8Array) {
    for (let offset = 0; offset < data.byteLength; offset += SLICE)
      yield data.subarray(offset, offset + SLICE);
  } else {
    let read = 0;
    for await (const chunk of createReadStream(data.path, { highWaterMark: SLICE })) {
      read += (chunk as Buffer).byteLength;
      // a file that grew while it was sent would not match the size the request declared
      if (read > data.size) throw new CliError(`${data.path} changed while it was uploaded`);
      yield chunk as Buffer;
    }
    if (read !== data.size) throw new CliError(`${data.path} changed while it was uploaded`);
  }
  yield tail;
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
