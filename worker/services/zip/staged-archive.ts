import { fail, type Result } from "../../../shared/errors";
import {
  LOCAL_HEADER_BYTES,
  locateEntries,
  readZipDirectory,
  type ZipDirectory,
  type ZipReader,
} from "../../../shared/zip/archive";
import { checkZipEntries, ZIP_MAX_ENTRIES, type ZipManifest } from "../../../shared/zip/policy";

/**
 * The table of contents of an archive staged in R2, read with the same parser the agent runs on
 * its copy (shared/zip), without the archive ever being held in the Worker: only the ranges the
 * parser asks for are fetched. The parser reads synchronously, so a read of a range not fetched yet
 * stops it; the range is fetched and the parse runs again (the tail with the end record, a ZIP64
 * record, the central directory: a few rounds). The entries' 30-byte local headers, one per entry
 * and spread over the whole archive, are picked out of one streamed pass over the object instead.
 */

/** a central directory larger than this is refused (10,000 entries with long names fit easily) */
const MAX_DIRECTORY_BYTES = 16 * 1024 * 1024;
/** rounds of "fetch what the parser asked for": the end record, a ZIP64 record, the directory */
const MAX_ROUNDS = 6;

class Missing extends Error {
  constructor(
    readonly offset: number,
    readonly length: number,
  ) {
    super(`bytes ${offset}+${length} not fetched`);
  }
}

/** A ZipReader over the fetched ranges of an archive of `size` bytes. */
class SparseReader implements ZipReader {
  /** the few large ranges (tail, directory) */
  private readonly ranges: { offset: number; bytes: Uint8Array }[] = [];
  /** the many local headers, read back at exactly their offsets */
  private readonly headers = new Map<number, Uint8Array>();

  constructor(readonly size: number) {}

  add(offset: number, bytes: Uint8Array): void {
    this.ranges.push({ offset, bytes });
  }

  addHeader(offset: number, bytes: Uint8Array): void {
    this.headers.set(offset, bytes);
  }

  read(offset: number, length: number): Uint8Array {
    const header = this.headers.get(offset);
    if (header && length <= header.byteLength) return header.subarray(0, length);
    for (const r of this.ranges) {
      if (offset >= r.offset && offset + length <= r.offset + r.bytes.byteLength) {
        return r.bytes.subarray(offset - r.offset, offset - r.offset + length);
      }
    }
    throw new Missing(offset, length);
  }
}

const tooLargeDirectory = () =>
  fail(
    "bad_request",
    `zip: the archive's central directory is over ${MAX_DIRECTORY_BYTES / 1024 / 1024} MiB; at most ${ZIP_MAX_ENTRIES} entries are allowed`,
  );

/** The staged archive `key` (`size` bytes) checked as shared/zip/policy.ts checks any archive. */
export async function inspectStagedZip(
  bucket: R2Bucket,
  key: string,
  size: number,
): Promise<Result<ZipManifest>> {
  const reader = new SparseReader(size);
  const directory = await withFetches(bucket, key, reader, () =>
    readZipDirectory(reader, { maxEntries: ZIP_MAX_ENTRIES }),
  );
  if (!directory.ok) return directory;
  await fetchLocalHeaders(bucket, key, reader, directory.value);
  let entries: ReturnType<typeof locateEntries>;
  try {
    entries = locateEntries(reader, directory.value);
  } catch (error) {
    if (!(error instanceof Missing)) throw error;
    return fail("bad_request", "zip: the archive is corrupt (entries' local headers overlap)");
  }
  return entries.ok ? checkZipEntries(entries.value) : entries;
}

/** Run `parse`, fetching each range it finds missing and running it again. */
async function withFetches<T>(
  bucket: R2Bucket,
  key: string,
  reader: SparseReader,
  parse: () => Result<T>,
): Promise<Result<T>> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    try {
      return parse();
    } catch (error) {
      if (!(error instanceof Missing)) throw error;
      if (error.length > MAX_DIRECTORY_BYTES) return tooLargeDirectory();
      reader.add(error.offset, await fetchRange(bucket, key, error.offset, error.length));
    }
  }
  return fail("bad_request", "zip: the archive is corrupt (its end records point at each other)");
}

async function fetchRange(bucket: R2Bucket, key: string, offset: number, length: number) {
  const object = await bucket.get(key, { range: { offset, length } });
  if (!object) throw new Error(`staged archive ${key} is gone`);
  return new Uint8Array(await object.arrayBuffer());
}

/**
 * Every entry's local header, picked out of one streamed read of the archive up to its central
 * directory (the headers lie in order of their offsets, so one pass finds them all).
 */
async function fetchLocalHeaders(
  bucket: R2Bucket,
  key: string,
  reader: SparseReader,
  directory: ZipDirectory,
): Promise<void> {
  const wanted = [...new Set(directory.entries.map((e) => e.localOffset))]
    .filter((at) => at + LOCAL_HEADER_BYTES <= directory.offset)
    .sort((a, b) => a - b);
  if (wanted.length === 0) return;
  const first = wanted[0] as number;
  const object = await bucket.get(key, { range: { offset: first, length: directory.offset - first } });
  if (!object) throw new Error(`staged archive ${key} is gone`);
  const source = object.body.getReader();
  let next = 0; // index into wanted
  let base = first; // the archive offset of the chunk's first byte
  // a header split over chunks: its first bytes, kept until the rest comes
  let partial: { at: number; bytes: Uint8Array; filled: number } | undefined;
  while (next < wanted.length || partial) {
    const { done, value } = await source.read();
    if (done) break;
    const end = base + value.byteLength;
    if (partial) {
      const n = Math.min(LOCAL_HEADER_BYTES - partial.filled, value.byteLength);
      partial.bytes.set(value.subarray(0, n), partial.filled);
      partial.filled += n;
      if (partial.filled === LOCAL_HEADER_BYTES) {
        reader.addHeader(partial.at, partial.bytes);
        partial = undefined;
      }
    }
    for (let at = wanted[next]; at !== undefined && at < end; at = wanted[++next]) {
      if (at + LOCAL_HEADER_BYTES <= end) {
        reader.addHeader(at, value.slice(at - base, at - base + LOCAL_HEADER_BYTES));
      } else {
        const bytes = new Uint8Array(LOCAL_HEADER_BYTES);
        bytes.set(value.subarray(at - base));
        // A second header starting within these 30 bytes would overlap this one: it is left
        // unfetched, and its read fails below as the overlap it is.
        partial ??= { at, bytes, filled: end - at };
      }
    }
    base = end;
  }
  await source.cancel().catch(() => undefined);
}
