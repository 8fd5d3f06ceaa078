import { ok, type Result } from "../../../shared/errors";

/**
 * A stream of unknown length into R2 without holding it: `put` needs the length up front, so the
 * bytes go up as a multipart upload, in parts of PART_BYTES (R2 wants every part but the last of
 * one size, and at least 5 MiB); one buffer of that size is all that is held. A stream that fits in
 * one part is a plain `put`.
 */

const PART_BYTES = 8 * 1024 * 1024;

class TooLarge extends Error {}

/**
 * Store `body` under `key`, at most `maxBytes` (past that `tooLarge()`, and nothing is stored). A
 * failure of `body` (the caller went away, a malformed form) is thrown as it came, nothing stored.
 */
export async function putStream(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  opts: { maxBytes: number; tooLarge: () => Result<never> },
): Promise<Result<{ size: number }>> {
  const { maxBytes } = opts;
  const reader = body.getReader();
  let part = new Uint8Array(PART_BYTES);
  let filled = 0;
  let size = 0;
  let upload: R2MultipartUpload | undefined;
  const parts: R2UploadedPart[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new TooLarge(`more than ${maxBytes} bytes`);
      }
      for (let taken = 0; taken < value.byteLength; ) {
        const n = Math.min(PART_BYTES - filled, value.byteLength - taken);
        part.set(value.subarray(taken, taken + n), filled);
        filled += n;
        taken += n;
        if (filled === PART_BYTES) {
          upload ??= await bucket.createMultipartUpload(key);
          parts.push(await upload.uploadPart(parts.length + 1, part));
          part = new Uint8Array(PART_BYTES);
          filled = 0;
        }
      }
    }
    if (!upload) {
      await bucket.put(key, part.subarray(0, filled));
    } else {
      if (filled > 0) parts.push(await upload.uploadPart(parts.length + 1, part.subarray(0, filled)));
      await upload.complete(parts);
    }
    return ok({ size });
  } catch (error) {
    await upload?.abort().catch(() => undefined);
    if (error instanceof TooLarge) return opts.tooLarge();
    throw error;
  }
}
