import { fail, ok, type Result } from "../../../shared/errors";
import { Sha256Counter } from "../../lib/sha256";

/**
 * A stream of unknown length into R2 without holding it: `put` needs the length up front, so the
 * bytes go up as a multipart upload, in parts of PART_BYTES (R2 wants every part but the last of
 * one size, and at least 5 MiB); one buffer of that size is all that is held. A stream that fits in
 * one part is a plain `put`. The bytes are counted and hashed (SHA-256) as they pass, so a caller
 * can check what was stored against what it was promised without reading it back. A storage call
 * that throws is made again (STORE_RETRIES): a 1 GB import is 128 parts, and one transient error of
 * R2 should not cost the caller the whole upload.
 */

const PART_BYTES = 8 * 1024 * 1024;

/** how often a storage call that threw is made again (R2's guidance: retry its transient errors) */
const STORE_RETRIES = 2;
class TooLarge extends Error {}
class StoreFailed extends Error {}
class Refused extends Error {
  constructor(readonly failure: Result<never> & { ok: false }) {
    super(failure.message);
  }
}

/**
 * Store `body` under `key`, at most `maxBytes` (past that `tooLarge()`, and nothing is stored). A
 * failure of `body` (the caller went away, a malformed form) is thrown as it came, nothing stored.
 * `first` sees the stream's first bytes before anything is stored and may refuse them (a file
 * that is not what it claims to be).
 */
export async function putStream(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  opts: {
    maxBytes: number;
    tooLarge: () => Result<never>;
    first?: { bytes: number; check: (head: Uint8Array) => Result<void> };
  },
): Promise<Result<{ size: number; sha256: string }>> {
  const { maxBytes } = opts;
  const reader = body.getReader();
  const part = new Uint8Array(PART_BYTES);
  let filled = 0;
  let size = 0;
  let upload: R2MultipartUpload | undefined;
  const parts: R2UploadedPart[] = [];
  const hash = new Sha256Counter();
  let checked = !opts.first;
  const head = new Uint8Array(opts.first?.bytes ?? 0);
  let headFilled = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new TooLarge(`more than ${maxBytes} bytes`);
      }
      await hash.update(value);
      if (!checked && opts.first) {
        // checked before any of it is stored
        const n = Math.min(head.byteLength - headFilled, value.byteLength);
        head.set(value.subarray(0, n), headFilled);
        headFilled += n;
        if (headFilled === head.byteLength) {
          const refused = opts.first.check(head);
          if (!refused.ok) {
            await reader.cancel().catch(() => undefined);
            throw new Refused(refused);
          }
          checked = true;
        }
      }
      for (let taken = 0; taken < value.byteLength; ) {
        const n = Math.min(PART_BYTES - filled, value.byteLength - taken);
        part.set(value.subarray(taken, taken + n), filled);
        filled += n;
        taken += n;
        if (filled === PART_BYTES) {
          upload ??= await store("starting the upload", () => bucket.createMultipartUpload(key));
          const [multipart, number] = [upload, parts.length + 1];
          parts.push(await store(`part ${number}`, () => multipart.uploadPart(number, part)));
          // The part has been sent whole once uploadPart resolved: the one buffer is reused, so a
          // long upload makes no garbage of 8 MiB a part for the collector to catch up with.
          filled = 0;
        }
      }
    }
    if (!checked && opts.first) {
      const refused = opts.first.check(head.subarray(0, headFilled));
      if (!refused.ok) throw new Refused(refused);
    }
    if (!upload) {
      await store("the object", () => bucket.put(key, part.subarray(0, filled)));
    } else {
      const [multipart, number, last] = [upload, parts.length + 1, part.subarray(0, filled)];
      if (filled > 0) parts.push(await store(`part ${number}`, () => multipart.uploadPart(number, last)));
      await store("completing the upload", () => multipart.complete(parts));
    }
    return ok({ size, sha256: await hash.hex() });
  } catch (error) {
    await upload?.abort().catch(() => undefined);
    if (error instanceof TooLarge) return opts.tooLarge();
    if (error instanceof Refused) return error.failure;
    if (error instanceof StoreFailed)
      return fail(
        "unavailable",
        `storage did not take the bytes (${error.message}); nothing was kept, try again`,
      );
    throw error;
  }
}

/**
 * One storage call, made again after a pause when it throws: the bytes it sends are still held
 * whole (a part is re-sent under its own number, which replaces it), so a repeat stores them once.
 * Past the retries it is `StoreFailed`: the caller answers 503 with nothing kept, never a 500.
 */
async function store<T>(what: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (attempt >= STORE_RETRIES) throw new StoreFailed(`${what}: ${message}`);
      console.warn(
        JSON.stringify({ level: "warn", msg: "storage call failed; trying again", what, error: message }),
      );
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}
