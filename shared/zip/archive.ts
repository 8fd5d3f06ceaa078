import { fail, ok, type Result } from "../errors";
import { decodeEntryName } from "./names";

/**
 * A ZIP archive's table of contents, read from its central directory (APPNOTE 6.3.x): the End of
 * Central Directory record (ZIP64 too), every central header, and each entry's local header, only
 * to learn where its data starts. Nothing is decompressed here. The Worker runs it on the uploaded
 * bytes before anything is created, and the agent runs the very same code on the file it fetched
 * before extracting: both halves see one archive the same way, so no entry can look harmless to one
 * parser and dangerous to another.
 *
 * Structural problems (not a ZIP, truncated, entries pointing outside the file or at each other's
 * data) are failures here; what the entries may contain is ./policy.ts's business.
 */

/** Random access to the archive's bytes (the Worker holds them in memory, the agent in a file). */
export interface ZipReader {
  readonly size: number;
  /** exactly `length` bytes from `offset` (callers stay inside `size`) */
  read(offset: number, length: number): Uint8Array;
}

/** An entry as its central header describes it (where its data starts is in its local header). */
export interface CentralEntry {
  /** the name as stored (decoded, not yet checked: see ./policy.ts) */
  name: string;
  /** a name ending in `/`, or a directory by its unix mode */
  isDirectory: boolean;
  /** unix mode bits from the external attributes (0 when the archive records none) */
  unixMode: number;
  /** 0 stored, 8 deflate; others are refused by the policy */
  method: number;
  flags: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  /** where the entry's local header starts */
  localOffset: number;
  /** seconds since the epoch, from the DOS date and time (read as UTC) */
  mtime: number;
}

export interface ZipEntry extends CentralEntry {
  /** where the compressed bytes start */
  dataOffset: number;
}

/** The central directory's entries, and where it starts (every entry's data ends before that). */
export interface ZipDirectory {
  entries: CentralEntry[];
  offset: number;
}

export const FLAG_ENCRYPTED = 0x0001;
export const FLAG_STRONG_ENCRYPTION = 0x0040;
export const FLAG_UTF8 = 0x0800;

const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;
const EOCD_SIZE = 22;
const CENTRAL_SIZE = 46;
/** a local header's fixed part: what `locateEntries` reads of each entry */
export const LOCAL_HEADER_BYTES = 30;
const MAX_COMMENT = 0xffff;

const corrupt = (why: string) => fail("bad_request", `zip: the archive is corrupt (${why})`);

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

function u64(dv: DataView, at: number): number | null {
  const n = dv.getBigUint64(at, true);
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(n);
}

interface Directory {
  entries: number;
  offset: number;
  size: number;
  /** where the central directory must end: the EOCD (or ZIP64 EOCD) record */
  end: number;
}

/** The End of Central Directory record, searched backwards past a comment of up to 64 KiB. */
function findDirectory(reader: ZipReader): Result<Directory> {
  if (reader.size < EOCD_SIZE) return fail("bad_request", "zip: not a ZIP archive (too short)");
  const tailLength = Math.min(reader.size, EOCD_SIZE + MAX_COMMENT);
  const tailStart = reader.size - tailLength;
  const tail = reader.read(tailStart, tailLength);
  const dv = view(tail);
  let at = -1;
  for (let i = tailLength - EOCD_SIZE; i >= 0; i--) {
    if (dv.getUint32(i, true) === SIG_EOCD && i + EOCD_SIZE + dv.getUint16(i + 20, true) <= tailLength) {
      at = i;
      break;
    }
  }
  if (at < 0) return fail("bad_request", "zip: not a ZIP archive (no end of central directory record)");
  const eocd = tailStart + at;
  if (dv.getUint16(at + 4, true) !== 0 || dv.getUint16(at + 6, true) !== 0) {
    return fail("bad_request", "zip: split or multi-volume archives are not supported");
  }
  let entries = dv.getUint16(at + 10, true);
  let size = dv.getUint32(at + 12, true);
  let offset = dv.getUint32(at + 16, true);
  let end = eocd;
  if (entries === 0xffff || size === 0xffffffff || offset === 0xffffffff) {
    const zip64 = readZip64(reader, eocd);
    if (!zip64.ok) return zip64;
    ({ entries, size, offset, end } = zip64.value);
  }
  if (offset + size > end) return corrupt("central directory runs past its end record");
  return ok({ entries, offset, size, end });
}

function readZip64(reader: ZipReader, eocd: number): Result<Directory> {
  if (eocd < 20) return corrupt("ZIP64 locator missing");
  const locator = view(reader.read(eocd - 20, 20));
  if (locator.getUint32(0, true) !== SIG_ZIP64_LOCATOR) return corrupt("ZIP64 locator missing");
  const at = u64(locator, 8);
  if (at === null || at + 56 > eocd - 20) return corrupt("ZIP64 end record out of range");
  const record = view(reader.read(at, 56));
  if (record.getUint32(0, true) !== SIG_ZIP64_EOCD) return corrupt("bad ZIP64 end record");
  if (record.getUint32(16, true) !== 0 || record.getUint32(20, true) !== 0) {
    return fail("bad_request", "zip: split or multi-volume archives are not supported");
  }
  const entries = u64(record, 32);
  const size = u64(record, 40);
  const offset = u64(record, 48);
  if (entries === null || size === null || offset === null) return corrupt("ZIP64 sizes out of range");
  return ok({ entries, size, offset, end: at });
}

/** DOS date and time → seconds since the epoch (1980-01-01 when the fields are nonsense). */
function dosTime(time: number, date: number): number {
  const year = 1980 + (date >>> 9);
  const month = (date >>> 5) & 0x0f;
  const day = date & 0x1f;
  const ms = Date.UTC(year, month - 1, day, time >>> 11, (time >>> 5) & 0x3f, (time & 0x1f) * 2);
  return month >= 1 && month <= 12 && day >= 1 && Number.isFinite(ms) ? Math.floor(ms / 1000) : 315532800;
}

/**
 * Every entry of the archive in central-directory order, at most `maxEntries` (more is refused
 * before any header is read, so a directory claiming millions of entries costs nothing).
 */
export function readZipEntries(reader: ZipReader, opts: { maxEntries: number }): Result<ZipEntry[]> {
  const directory = readZipDirectory(reader, opts);
  return directory.ok ? locateEntries(reader, directory.value) : directory;
}

/** The central directory: the first half of `readZipEntries`, reading only the archive's end. */
export function readZipDirectory(reader: ZipReader, opts: { maxEntries: number }): Result<ZipDirectory> {
  const dir = findDirectory(reader);
  if (!dir.ok) return dir;
  const { entries: count, offset, size } = dir.value;
  if (count > opts.maxEntries) {
    return fail(
      "bad_request",
      `zip: the archive has ${count} entries; at most ${opts.maxEntries} are allowed`,
    );
  }
  // Each central header takes at least 46 bytes: a count the directory cannot hold is a lie.
  if (count * CENTRAL_SIZE > size) return corrupt("entry count does not fit the central directory");
  const cd = reader.read(offset, size);
  const dv = view(cd);
  const entries: CentralEntry[] = [];
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + CENTRAL_SIZE > size || dv.getUint32(p, true) !== SIG_CENTRAL) {
      return corrupt(`central header ${i + 1} missing`);
    }
    const madeBy = dv.getUint16(p + 4, true);
    const flags = dv.getUint16(p + 8, true);
    const method = dv.getUint16(p + 10, true);
    const time = dv.getUint16(p + 12, true);
    const date = dv.getUint16(p + 14, true);
    const crc32 = dv.getUint32(p + 16, true);
    let compressedSize = dv.getUint32(p + 20, true);
    let uncompressedSize = dv.getUint32(p + 24, true);
    const nameLength = dv.getUint16(p + 28, true);
    const extraLength = dv.getUint16(p + 30, true);
    const commentLength = dv.getUint16(p + 32, true);
    const disk = dv.getUint16(p + 34, true);
    const external = dv.getUint32(p + 38, true);
    let localOffset = dv.getUint32(p + 42, true);
    const next = p + CENTRAL_SIZE + nameLength + extraLength + commentLength;
    if (next > size) return corrupt(`central header ${i + 1} runs past the directory`);
    const nameBytes = cd.subarray(p + CENTRAL_SIZE, p + CENTRAL_SIZE + nameLength);
    const name = decodeEntryName(nameBytes, (flags & FLAG_UTF8) !== 0);
    if (name === null) return fail("bad_request", `zip: entry ${i + 1} has a name that is not valid UTF-8`);

    // ZIP64: the fields set to all ones are in the 0x0001 extra field, in this order.
    if (uncompressedSize === 0xffffffff || compressedSize === 0xffffffff || localOffset === 0xffffffff) {
      const extra = view(
        cd.subarray(p + CENTRAL_SIZE + nameLength, p + CENTRAL_SIZE + nameLength + extraLength),
      );
      const sizes = zip64Sizes(extra, { uncompressedSize, compressedSize, localOffset });
      if (!sizes) return corrupt(`entry ${JSON.stringify(name)} lacks its ZIP64 sizes`);
      ({ uncompressedSize, compressedSize, localOffset } = sizes);
    }
    if (disk !== 0 && disk !== 0xffff) return fail("bad_request", "zip: split archives are not supported");

    // Unix hosts (3) and macOS (19) keep st_mode in the high 16 bits; other hosts leave them 0,
    // and whatever a crafted archive puts there is checked anyway (see policy: symlinks).
    const unixMode = external >>> 16;
    const dosDirectory = (madeBy >>> 8 === 0 || madeBy >>> 8 === 11) && (external & 0x10) !== 0;
    const isDirectory = name.endsWith("/") || (unixMode & 0o170000) === 0o040000 || dosDirectory;

    entries.push({
      name,
      isDirectory,
      unixMode,
      method,
      flags,
      crc32,
      compressedSize,
      uncompressedSize,
      localOffset,
      mtime: dosTime(time, date),
    });
    p = next;
  }
  return ok({ entries, offset });
}

/**
 * The second half of `readZipEntries`: each entry's local header, only to learn where its data
 * starts; entries running into the directory or sharing bytes are refused.
 */
export function locateEntries(reader: ZipReader, directory: ZipDirectory): Result<ZipEntry[]> {
  const { offset } = directory;
  const entries: ZipEntry[] = [];
  const spans: Span[] = [];
  for (const e of directory.entries) {
    const dataOffset = localDataOffset(reader, e.localOffset, offset);
    if (dataOffset === null) return corrupt(`entry ${JSON.stringify(e.name)} has no local header`);
    if (dataOffset + e.compressedSize > offset) {
      return corrupt(`entry ${JSON.stringify(e.name)} runs into the central directory`);
    }
    entries.push({ ...e, dataOffset });
    spans.push({ name: e.name, start: e.localOffset, end: dataOffset + e.compressedSize });
  }
  const overlap = overlapping(spans);
  if (overlap) {
    // The "non-recursive zip bomb": many entries sharing one stretch of compressed data.
    return fail(
      "bad_request",
      `zip: entries ${JSON.stringify(overlap[0])} and ${JSON.stringify(overlap[1])} share their data (a zip bomb)`,
    );
  }
  return ok(entries);
}

function zip64Sizes(
  extra: DataView,
  fields: { uncompressedSize: number; compressedSize: number; localOffset: number },
) {
  let p = 0;
  while (p + 4 <= extra.byteLength) {
    const id = extra.getUint16(p, true);
    const length = extra.getUint16(p + 2, true);
    if (p + 4 + length > extra.byteLength) return null;
    if (id === 0x0001) {
      let q = p + 4;
      const take = (current: number) => {
        if (current !== 0xffffffff) return current;
        if (q + 8 > p + 4 + length) return null;
        const value = u64(extra, q);
        q += 8;
        return value;
      };
      const uncompressedSize = take(fields.uncompressedSize);
      const compressedSize = take(fields.compressedSize);
      const localOffset = take(fields.localOffset);
      if (uncompressedSize === null || compressedSize === null || localOffset === null) return null;
      return { uncompressedSize, compressedSize, localOffset };
    }
    p += 4 + length;
  }
  return null;
}

/** Where an entry's data begins: after its local header's own name and extra field. */
function localDataOffset(reader: ZipReader, at: number, directoryOffset: number): number | null {
  if (at + LOCAL_HEADER_BYTES > directoryOffset) return null;
  const dv = view(reader.read(at, LOCAL_HEADER_BYTES));
  if (dv.getUint32(0, true) !== SIG_LOCAL) return null;
  return at + LOCAL_HEADER_BYTES + dv.getUint16(26, true) + dv.getUint16(28, true);
}

interface Span {
  name: string;
  start: number;
  end: number;
}

/** Two entries whose [local header, end of data) ranges overlap, if any. */
function overlapping(unsorted: Span[]): [string, string] | null {
  const spans = [...unsorted].sort((a, b) => a.start - b.start);
  for (let i = 1; i < spans.length; i++) {
    const prev = spans[i - 1];
    const cur = spans[i];
    if (prev && cur && cur.start < prev.end) return [prev.name, cur.name];
  }
  return null;
}
