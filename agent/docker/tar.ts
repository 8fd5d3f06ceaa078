/**
 * A minimal ustar writer for the few small files the agent puts into a pod (env, crontab, keys).
 * The `tar` package packs from the filesystem; these files exist only in memory, and every entry
 * must carry uid/gid 1000 so that `putArchive` leaves them owned by pod_user.
 */
export interface TarEntry {
  /** relative path inside the archive, no leading slash, no `..` */
  path: string;
  type: "file" | "dir";
  mode: number;
  /** file content (ignored for directories) */
  content?: string | Buffer;
  uid: number;
  gid: number;
}

const BLOCK = 512;

function writeString(buf: Buffer, offset: number, length: number, value: string) {
  const bytes = Buffer.from(value, "utf8");
  if (bytes.length > length) throw new Error(`tar: field too long: ${value}`);
  bytes.copy(buf, offset);
}

function writeOctal(buf: Buffer, offset: number, length: number, value: number) {
  // length-1 octal digits, then NUL
  writeString(buf, offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
}

function header(entry: TarEntry, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  let name = entry.type === "dir" && !entry.path.endsWith("/") ? `${entry.path}/` : entry.path;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    // ustar: split at a slash into prefix (≤155) and name (≤100)
    const cut = name.lastIndexOf("/", name.length - 2);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  writeString(h, 0, 100, name);
  writeOctal(h, 100, 8, entry.mode & 0o7777);
  writeOctal(h, 108, 8, entry.uid);
  writeOctal(h, 116, 8, entry.gid);
  writeOctal(h, 124, 12, size);
  writeOctal(h, 136, 12, mtime);
  h.fill(" ", 148, 156); // checksum placeholder: spaces while summing
  h.write(entry.type === "dir" ? "5" : "0", 156, "ascii");
  writeString(h, 257, 6, "ustar\0");
  writeString(h, 263, 2, "00");
  writeString(h, 345, 155, prefix);
  let sum = 0;
  for (const byte of h) sum += byte;
  writeString(h, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return h;
}

export function validTarPath(p: string): boolean {
  return p.length > 0 && !p.startsWith("/") && !p.split("/").some((s) => s === ".." || s === "");
}

/** The whole archive in memory (it is a few kilobytes). */
export function buildTar(entries: TarEntry[], mtime = Math.floor(Date.now() / 1000)): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (!validTarPath(e.path.replace(/\/$/, ""))) throw new Error(`tar: bad path ${e.path}`);
    const body = e.type === "file" ? Buffer.from(e.content ?? "") : Buffer.alloc(0);
    parts.push(header(e, body.length, mtime));
    if (body.length > 0) {
      parts.push(body);
      const pad = (BLOCK - (body.length % BLOCK)) % BLOCK;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}
