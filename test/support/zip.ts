/**
 * A small ZIP writer for tests, in web APIs only (workerd and Node alike): every field a hostile
 * archive plays with can be set by hand (names, unix modes for symlinks, flags, sizes that lie), so
 * the refusals are tested on the exact bytes an attacker would send.
 */

export interface TestZipEntry {
  name: string;
  /** file content; a symlink's target */
  data?: Uint8Array | string;
  /** 8 deflate (default for non-empty files), 0 stored */
  method?: 0 | 8;
  /** st_mode; default 0o100644 for files, 0o040755 for names ending in `/` */
  unixMode?: number;
  /** extra general-purpose flags (1: encrypted) */
  flags?: number;
  /** the uncompressed size written in both headers (default: the real one) */
  declaredSize?: number;
  /** the CRC-32 written in both headers (default: the real one) */
  crc?: number;
}

const encoder = new TextEncoder();
const bytesOf = (data: Uint8Array | string | undefined) =>
  typeof data === "string" ? encoder.encode(data) : (data ?? new Uint8Array());

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of data) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export async function deflateRaw(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

class Writer {
  private readonly parts: Uint8Array[] = [];
  length = 0;
  push(part: Uint8Array) {
    this.parts.push(part);
    this.length += part.length;
  }
  header(size: number, fill: (dv: DataView) => void) {
    const buf = new Uint8Array(size);
    fill(new DataView(buf.buffer));
    this.push(buf);
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** The archive's bytes; entries in the given order (duplicates allowed: that is a test case). */
export async function buildZip(
  entries: TestZipEntry[],
  opts: { comment?: string } = {},
): Promise<Uint8Array> {
  const w = new Writer();
  const central: {
    e: TestZipEntry;
    name: Uint8Array;
    crc: number;
    size: number;
    csize: number;
    at: number;
    method: number;
    mode: number;
  }[] = [];
  for (const e of entries) {
    const name = encoder.encode(e.name);
    const data = bytesOf(e.data);
    const isDir = e.name.endsWith("/");
    const method = e.method ?? (data.length > 0 ? 8 : 0);
    const payload = method === 8 ? await deflateRaw(data) : data;
    const crc = e.crc ?? crc32(data);
    const size = e.declaredSize ?? data.length;
    const mode = e.unixMode ?? (isDir ? 0o040755 : 0o100644);
    const at = w.length;
    w.header(30, (dv) => {
      dv.setUint32(0, 0x04034b50, true);
      dv.setUint16(4, 20, true);
      dv.setUint16(6, 0x0800 | (e.flags ?? 0), true);
      dv.setUint16(8, method, true);
      dv.setUint16(10, 0, true);
      dv.setUint16(12, 0x5a21, true); // 2025-01-01
      dv.setUint32(14, crc, true);
      dv.setUint32(18, payload.length, true);
      dv.setUint32(22, size, true);
      dv.setUint16(26, name.length, true);
      dv.setUint16(28, 0, true);
    });
    w.push(name);
    w.push(payload);
    central.push({ e, name, crc, size, csize: payload.length, at, method, mode });
  }
  const cdStart = w.length;
  for (const c of central) {
    w.header(46, (dv) => {
      dv.setUint32(0, 0x02014b50, true);
      dv.setUint16(4, 0x0314, true); // made by: unix, 2.0
      dv.setUint16(6, 20, true);
      dv.setUint16(8, 0x0800 | (c.e.flags ?? 0), true);
      dv.setUint16(10, c.method, true);
      dv.setUint16(12, 0, true);
      dv.setUint16(14, 0x5a21, true);
      dv.setUint32(16, c.crc, true);
      dv.setUint32(20, c.csize, true);
      dv.setUint32(24, c.size, true);
      dv.setUint16(28, c.name.length, true);
      dv.setUint32(38, (c.mode << 16) >>> 0, true);
      dv.setUint32(42, c.at, true);
    });
    w.push(c.name);
  }
  const cdSize = w.length - cdStart;
  const comment = encoder.encode(opts.comment ?? "");
  w.header(22, (dv) => {
    dv.setUint32(0, 0x06054b50, true);
    dv.setUint16(8, central.length, true);
    dv.setUint16(10, central.length, true);
    dv.setUint32(12, cdSize, true);
    dv.setUint32(16, cdStart, true);
    dv.setUint16(20, comment.length, true);
  });
  w.push(comment);
  return w.bytes();
}

/** A static site, a node app: the archives the happy paths use. */
export const siteZip = (title = "Hello from a ZIP") =>
  buildZip([
    { name: "index.html", data: `<!doctype html><title>${title}</title><h1>${title}</h1>\n` },
    { name: "css/" },
    { name: "css/site.css", data: "h1 { color: teal }\n" },
  ]);

export const nodeZip = (greeting = "hello from node") =>
  buildZip([
    {
      name: "package.json",
      data: JSON.stringify({
        name: "zip-app",
        version: "1.0.0",
        scripts: { start: "node server.js" },
        dependencies: {},
      }),
    },
    {
      name: "server.js",
      data: `require("http").createServer((q, s) => s.end(${JSON.stringify(greeting)})).listen(process.env.PORT);\n`,
    },
  ]);
