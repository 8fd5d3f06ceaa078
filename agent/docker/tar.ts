/**
 * The agent's one tar writer (POSIX pax over ustar), for both ways it puts files into a pod:
 * - `buildTar`: the few small files of a pod's spec (env, crontab, keys; ./spec-files.ts), whole in
 *   memory for the engine's `putArchive`. The `tar` package packs from the filesystem; these files
 *   exist only in memory, and every entry carries uid/gid 1000 so the engine leaves them owned by
 *   pod_user.
 * - `tarHeader` / `padding` / `tarEnd`: a streamed archive that `tar -x` inside the pod unpacks
 *   (agent/zip/unpack.ts); there tar runs as pod_user and keeps its own uid whatever the fields say.
 *
 * Paths that do not fit ustar's fields (long, or not ASCII) travel in a pax `path` record before
 * their header, which GNU tar and the engine read.
 */

export const BLOCK = 512;
const POD_USER_ID = 1000;

export interface TarHeaderInput {
  /** relative path inside the archive, no leading slash */
  path: string;
  type: "file" | "dir";
  mode: number;
  size: number;
  /** seconds since the epoch */
  mtime: number;
  /** owner ids (default 1000, pod_user) */
  uid?: number;
  gid?: number;
}

const octal = (buf: Buffer, offset: number, length: number, value: number) => {
  buf.write(`${value.toString(8).padStart(length - 1, "0")}\0`, offset, length, "ascii");
};

interface Ustar {
  name: string;
  type: "0" | "5" | "x";
  mode: number;
  size: number;
  mtime: number;
  uid: number;
  gid: number;
}

function ustar(h: Ustar): Buffer {
  const b = Buffer.alloc(BLOCK);
  b.write(h.name, 0, 100, "utf8");
  octal(b, 100, 8, h.mode & 0o7777);
  octal(b, 108, 8, h.uid);
  octal(b, 116, 8, h.gid);
  octal(b, 124, 12, h.size);
  octal(b, 136, 12, Math.max(0, Math.min(h.mtime, 0o77777777777)));
  b.fill(" ", 148, 156); // checksum placeholder: spaces while summing
  b.write(h.type, 156, 1, "ascii");
  b.write("ustar\0", 257, 6, "ascii");
  b.write("00", 263, 2, "ascii");
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "ascii");
  return b;
}

/** A pax record: "<length> path=<value>\n", where the length counts itself. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const bodyLength = Buffer.byteLength(body);
  let length = bodyLength + String(bodyLength).length;
  if (String(length).length !== String(bodyLength).length) length += 1;
  return Buffer.from(`${length}${body}`, "utf8");
}

export const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** The header blocks of one entry (a pax header first when the path needs one). */
export function tarHeader(entry: TarHeaderInput): Buffer[] {
  const name = entry.type === "dir" ? `${entry.path}/` : entry.path;
  const common = {
    type: entry.type === "dir" ? ("5" as const) : ("0" as const),
    mode: entry.mode,
    size: entry.size,
    mtime: entry.mtime,
    uid: entry.uid ?? POD_USER_ID,
    gid: entry.gid ?? POD_USER_ID,
  };
  const fits = Buffer.byteLength(name) <= 100 && /^[\u0020-\u007e]*$/.test(name);
  if (fits) return [ustar({ ...common, name })];
  const records = paxRecord("path", name);
  return [
    ustar({ ...common, name: "././@PaxHeader", type: "x", mode: 0o644, size: records.length }),
    records,
    padding(records.length),
    ustar({ ...common, name: name.slice(0, 100).replace(/[^\u0020-\u007e]/g, "_") }),
  ];
}

/** Two zero blocks: the end of the archive. */
export const tarEnd = (): Buffer => Buffer.alloc(BLOCK * 2);

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

export function validTarPath(p: string): boolean {
  return p.length > 0 && !p.startsWith("/") && !p.split("/").some((s) => s === ".." || s === "");
}

/** The whole archive in memory (it is a few kilobytes). */
export function buildTar(entries: TarEntry[], mtime = Math.floor(Date.now() / 1000)): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const path = e.path.replace(/\/$/, "");
    if (!validTarPath(path)) throw new Error(`tar: bad path ${e.path}`);
    const body = e.type === "file" ? Buffer.from(e.content ?? "") : Buffer.alloc(0);
    parts.push(
      ...tarHeader({ path, type: e.type, mode: e.mode, size: body.length, mtime, uid: e.uid, gid: e.gid }),
    );
    if (body.length > 0) parts.push(body, padding(body.length));
  }
  parts.push(tarEnd());
  return Buffer.concat(parts);
}
