/**
 * Headers of a streamed tar archive (POSIX pax over ustar): `tar -x` inside the pod unpacks what
 * agent/zip/unpack.ts streams. Paths that do not fit ustar's fields (long, or not ASCII) travel in
 * a pax `path` record before their header, which GNU tar reads. Owner fields are 1000 but tar, run
 * as pod_user, keeps its own uid whatever they say.
 */

export const BLOCK = 512;

export interface TarHeaderInput {
  path: string;
  type: "file" | "dir";
  mode: number;
  size: number;
  /** seconds since the epoch */
  mtime: number;
}

const octal = (buf: Buffer, offset: number, length: number, value: number) => {
  buf.write(`${value.toString(8).padStart(length - 1, "0")}\0`, offset, length, "ascii");
};

function ustar(name: string, type: "0" | "5" | "x", mode: number, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, "utf8");
  octal(h, 100, 8, mode & 0o7777);
  octal(h, 108, 8, 1000);
  octal(h, 116, 8, 1000);
  octal(h, 124, 12, size);
  octal(h, 136, 12, Math.max(0, Math.min(mtime, 0o77777777777)));
  h.fill(" ", 148, 156); // checksum placeholder: spaces while summing
  h.write(type, 156, 1, "ascii");
  h.write("ustar\0", 257, 6, "ascii");
  h.write("00", 263, 2, "ascii");
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "ascii");
  return h;
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
  const type = entry.type === "dir" ? "5" : "0";
  const fits = Buffer.byteLength(name) <= 100 && /^[\u0020-\u007e]*$/.test(name);
  if (fits) return [ustar(name, type, entry.mode, entry.size, entry.mtime)];
  const records = paxRecord("path", name);
  return [
    ustar("././@PaxHeader", "x", 0o644, records.length, entry.mtime),
    records,
    padding(records.length),
    ustar(name.slice(0, 100).replace(/[^\u0020-\u007e]/g, "_"), type, entry.mode, entry.size, entry.mtime),
  ];
}

/** Two zero blocks: the end of the archive. */
export const tarEnd = (): Buffer => Buffer.alloc(BLOCK * 2);
