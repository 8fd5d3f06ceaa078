import { fail, ok, type Result } from "../errors";
import {
  FLAG_ENCRYPTED,
  FLAG_STRONG_ENCRYPTION,
  readZipEntries,
  type ZipEntry,
  type ZipReader,
} from "./archive";

/**
 * What an archive may hold to be unpacked into a pod's ~/app, checked on the table of contents
 * (./archive.ts) by the Worker before anything is created, and again by the agent, which then also
 * holds every entry to its declared size while inflating (agent/zip/unpack.ts): the declared sizes
 * checked here are only what the archive claims.
 *
 * Refused: names that would leave ~/app (`..`, absolute, drive letters, backslashes), links and
 * device files, encryption, methods other than stored and deflate, the same path twice (or a file
 * used as a folder), more than ZIP_MAX_ENTRIES entries, more than ZIP_MAX_UNCOMPRESSED_BYTES in
 * total, and entries inflating more than ZIP_MAX_RATIO times (zip bombs).
 */

export const ZIP_MAX_ENTRIES = 10_000;
/** what one archive may unpack to, all entries together */
export const ZIP_MAX_UNCOMPRESSED_BYTES = 1024 * 1024 * 1024;
/** deflate cannot exceed ~1032:1; an entry claiming more than this is a bomb or lies */
export const ZIP_MAX_RATIO = 1000;
/** small entries may compress absurdly well (a file of spaces): the ratio is checked above this size */
export const ZIP_RATIO_MIN_BYTES = 1024 * 1024;
const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_BYTES = 4096;

/** macOS's resource-fork shadow folder: never part of the app, left out rather than unpacked */
const IGNORED_TOP = "__MACOSX";

export interface ZipItem {
  /** normalised relative path: no leading or trailing slash */
  path: string;
  type: "file" | "dir";
  /** 0o755 for directories and files the archive marks executable, else 0o644 */
  mode: number;
  entry: ZipEntry;
}

export interface ZipManifest {
  /** what is unpacked, in archive order */
  items: ZipItem[];
  files: number;
  /** declared uncompressed bytes of all files */
  bytes: number;
  /** the names at the archive's top level (files and folders, without trailing slash) */
  topLevel: { files: string[]; dirs: string[] };
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

const shown = (name: string) => JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name);
const refuse = (name: string, why: string) => fail("bad_request", `zip: entry ${shown(name)} ${why}`);
const utf8Length = (s: string) => new TextEncoder().encode(s).length;

/** The path problem of `name`, or null when it is a safe relative path. */
function pathProblem(name: string): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(name)) return "has control characters in its name";
  if (name.includes("\\")) return "uses backslashes (a Windows path); use forward slashes";
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name)) return "has an absolute path";
  const segments = name.replace(/\/$/, "").split("/");
  if (segments.includes("..")) return 'climbs out of the archive with ".." (zip-slip)';
  if (segments.some((s) => s === "" || s === ".")) return 'has an empty or "." path segment';
  if (segments.some((s) => utf8Length(s) > MAX_SEGMENT_BYTES)) return "has a name part over 255 bytes";
  if (utf8Length(name) > MAX_PATH_BYTES) return "has a path over 4096 bytes";
  return null;
}

function entryProblem(e: ZipEntry): string | null {
  if (e.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION) || e.method === 99) {
    return "is encrypted; upload an archive without a password";
  }
  const type = e.unixMode & S_IFMT;
  if (type === S_IFLNK) return "is a symbolic link; links are not unpacked";
  if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) return "is a device, FIFO or socket";
  if (e.isDirectory) return e.uncompressedSize > 0 ? "is a folder with content (corrupt)" : null;
  if (e.method !== 0 && e.method !== 8) {
    return `uses compression method ${e.method}; only stored (0) and deflate (8) are supported`;
  }
  if (e.method === 0 && e.compressedSize !== e.uncompressedSize) return "is stored with two sizes (corrupt)";
  if (
    e.uncompressedSize >= ZIP_RATIO_MIN_BYTES &&
    e.uncompressedSize > Math.max(e.compressedSize, 1) * ZIP_MAX_RATIO
  ) {
    return `inflates ${e.compressedSize} bytes to ${e.uncompressedSize} (over ${ZIP_MAX_RATIO}:1, a zip bomb)`;
  }
  return null;
}

/** Checks every entry; the manifest of what may be unpacked, or a 400 naming the first problem. */
export function checkZipEntries(entries: ZipEntry[]): Result<ZipManifest> {
  const items: ZipItem[] = [];
  const kinds = new Map<string, "file" | "dir">();
  let bytes = 0;
  for (const e of entries) {
    const problem = pathProblem(e.name) ?? entryProblem(e);
    if (problem) return refuse(e.name, problem);
    const path = e.name.replace(/\/$/, "");
    if (path === IGNORED_TOP || path.startsWith(`${IGNORED_TOP}/`)) continue;
    const type = e.isDirectory ? "dir" : "file";
    if (kinds.has(path)) return refuse(e.name, "appears twice in the archive");
    kinds.set(path, type);
    if (type === "file") {
      bytes += e.uncompressedSize;
      if (bytes > ZIP_MAX_UNCOMPRESSED_BYTES) {
        return fail(
          "bad_request",
          `zip: the archive unpacks to more than ${ZIP_MAX_UNCOMPRESSED_BYTES / 1024 / 1024} MiB (a zip bomb, or too large for a pod)`,
        );
      }
    }
    const executable = (e.unixMode & 0o111) !== 0;
    items.push({ path, type, mode: type === "dir" || executable ? 0o755 : 0o644, entry: e });
  }
  // A file cannot also be a folder: "a" and "a/b" together would make the unpacking fail half way.
  for (const path of kinds.keys()) {
    for (let cut = path.indexOf("/"); cut > 0; cut = path.indexOf("/", cut + 1)) {
      const parent = path.slice(0, cut);
      if (kinds.get(parent) === "file") return refuse(parent, `is a file, but ${shown(path)} is inside it`);
    }
  }
  const topFiles = new Set<string>();
  const topDirs = new Set<string>();
  for (const [path, type] of kinds) {
    const cut = path.indexOf("/");
    if (cut < 0 && type === "file") topFiles.add(path);
    else topDirs.add(cut < 0 ? path : path.slice(0, cut));
  }
  return ok({
    items,
    files: items.filter((i) => i.type === "file").length,
    bytes,
    topLevel: { files: [...topFiles].sort(), dirs: [...topDirs].sort() },
  });
}

/** Table of contents and policy in one: what the Worker and the agent both call. */
export function inspectZip(reader: ZipReader): Result<ZipManifest> {
  const entries = readZipEntries(reader, { maxEntries: ZIP_MAX_ENTRIES });
  return entries.ok ? checkZipEntries(entries.value) : entries;
}

/** A reader over bytes already in memory. */
export const bytesReader = (bytes: Uint8Array): ZipReader => ({
  size: bytes.byteLength,
  read: (offset, length) => bytes.subarray(offset, offset + length),
});
