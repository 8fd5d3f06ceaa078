import { createReadStream, readSync } from "node:fs";
import { pipeline, Readable } from "node:stream";
import { crc32, createInflateRaw } from "node:zlib";
import type { ZipReader } from "../../shared/zip/archive";
import { ZIP_MAX_UNCOMPRESSED_BYTES, type ZipItem, type ZipManifest } from "../../shared/zip/policy";
import { padding, tarEnd, tarHeader } from "../docker/tar";
import { AgentError } from "../errors";

/**
 * A checked archive (shared/zip) turned into the tar stream the pod's `tar -x` reads: every item
 * under `app/`, then an empty `done` file. The script in ./deploy.ts swaps `app` in only when
 * `done` arrived, so a stream cut short for any reason changes nothing, even one cut exactly
 * between two entries (which tar itself would take for a complete archive).
 *
 * The table of contents was checked, but it is only what the archive claims: every entry is held
 * to its declared size while it inflates (one byte more and the stream fails: a bomb with lying
 * headers is stopped at its declared size) and to its CRC-32, and the total to the policy's cap.
 */

export const APP_DIR = "app";
export const DONE_MARK = "done";

/** Random access to the fetched archive's file, for the table of contents. */
export function fileReader(fd: number, size: number): ZipReader {
  return {
    size,
    read(offset, length) {
      const buf = Buffer.alloc(length);
      let got = 0;
      while (got < length) {
        const n = readSync(fd, buf, got, length - got, offset + got);
        if (n === 0) throw new AgentError("bad_request", "zip: the archive is corrupt (truncated)");
        got += n;
      }
      return buf;
    },
  };
}

export interface UnpackStats {
  files: number;
  /** bytes actually inflated */
  bytes: number;
}

/** The entry's content as it inflates, exactly as many bytes as it declares, or an error. */
async function* entryData(file: string, item: ZipItem, total: { bytes: number }): AsyncGenerator<Buffer> {
  const e = item.entry;
  if (e.compressedSize === 0 && e.uncompressedSize === 0) return;
  const raw = createReadStream(file, { start: e.dataOffset, end: e.dataOffset + e.compressedSize - 1 });
  const data = e.method === 8 ? pipeline(raw, createInflateRaw(), () => undefined) : raw;
  let size = 0;
  let crc = 0;
  try {
    for await (const chunk of data as AsyncIterable<Buffer>) {
      size += chunk.length;
      total.bytes += chunk.length;
      if (size > e.uncompressedSize) {
        throw new AgentError(
          "bad_request",
          `zip: entry ${JSON.stringify(item.path)} inflates past the ${e.uncompressedSize} bytes its header declares (a zip bomb)`,
        );
      }
      if (total.bytes > ZIP_MAX_UNCOMPRESSED_BYTES) {
        throw new AgentError("bad_request", "zip: the archive inflates past the size limit (a zip bomb)");
      }
      crc = crc32(chunk, crc);
      yield chunk;
    }
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw new AgentError(
      "bad_request",
      `zip: entry ${JSON.stringify(item.path)} does not inflate (${err instanceof Error ? err.message : String(err)})`,
    );
  } finally {
    raw.destroy();
  }
  if (size !== e.uncompressedSize) {
    throw new AgentError(
      "bad_request",
      `zip: entry ${JSON.stringify(item.path)} holds ${size} bytes, not the ${e.uncompressedSize} its header declares`,
    );
  }
  if (crc >>> 0 !== e.crc32 >>> 0) {
    throw new AgentError("bad_request", `zip: entry ${JSON.stringify(item.path)} fails its CRC-32 check`);
  }
}

async function* tarOf(
  file: string,
  manifest: ZipManifest,
  stats: UnpackStats,
  doneMark: boolean,
): AsyncGenerator<Buffer> {
  const now = Math.floor(Date.now() / 1000);
  yield* tarHeader({ path: APP_DIR, type: "dir", mode: 0o755, size: 0, mtime: now });
  const total = { bytes: 0 };
  for (const item of manifest.items) {
    const path = `${APP_DIR}/${item.path}`;
    if (item.type === "dir") {
      yield* tarHeader({ path, type: "dir", mode: item.mode, size: 0, mtime: item.entry.mtime });
      continue;
    }
    const size = item.entry.uncompressedSize;
    yield* tarHeader({ path, type: "file", mode: item.mode, size, mtime: item.entry.mtime });
    yield* entryData(file, item, total);
    const pad = padding(size);
    if (pad.length) yield pad;
    stats.files += 1;
    stats.bytes = total.bytes;
  }
  if (doneMark) yield* tarHeader({ path: DONE_MARK, type: "file", mode: 0o644, size: 0, mtime: now });
  yield tarEnd();
}

/**
 * The tar stream of `manifest` (read from `file`), and its stats, filled in as it goes. A failure
 * (a lying entry) destroys the stream with an AgentError; `failure()` tells it apart from the
 * consumer's own problems.
 */
export function unpackStream(file: string, manifest: ZipManifest, opts: { doneMark?: boolean } = {}) {
  const stats: UnpackStats = { files: 0, bytes: 0 };
  let failure: AgentError | undefined;
  async function* guarded() {
    try {
      yield* tarOf(file, manifest, stats, opts.doneMark ?? true);
    } catch (err) {
      failure =
        err instanceof AgentError ? err : new AgentError("internal", `zip: ${String(err).slice(0, 300)}`);
      throw failure;
    }
  }
  const stream = Readable.from(guarded(), { objectMode: false });
  return { stream, stats, failure: () => failure };
}
