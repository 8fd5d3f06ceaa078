import { open } from "node:fs/promises";

/**
 * Reading a container's /proc from the host, with bounds: a tenant decides how long some of these
 * files are (a socket table with a million entries, a command line of megabytes).
 */

/** a /proc file of at most `max` bytes (read no further), or null when it is longer or unreadable */
export async function readBoundedFile(path: string, max = 4096): Promise<string | null> {
  const file = await open(path, "r").catch(() => null);
  if (!file) return null;
  try {
    const buf = Buffer.alloc(Math.min(max + 1, 64 * 1024));
    const parts: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead } = await file.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > max) return null;
      parts.push(Buffer.from(buf.subarray(0, bytesRead)));
    }
    return Buffer.concat(parts).toString("latin1");
  } catch {
    return null;
  } finally {
    await file.close();
  }
}

export interface Listener {
  /** the local address as the table writes it (hex, host byte order per 32-bit word) */
  address: string;
  port: number;
  /** the socket's inode (what a process's fd links name) */
  inode: string;
}

const LISTEN = "0A";

/** The listening sockets of a /proc/net/tcp or tcp6 table. */
export function listeners(table: string): Listener[] {
  const out: Listener[] = [];
  for (const line of table.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    if (f[3] !== LISTEN) continue;
    const local = f[1] ?? "";
    const colon = local.lastIndexOf(":");
    const port = Number.parseInt(local.slice(colon + 1), 16);
    if (colon > 0 && port > 0 && port < 65536)
      out.push({ address: local.slice(0, colon), port, inode: f[9] ?? "" });
  }
  return out;
}

/** Docker's embedded DNS resolver: it listens on 127.0.0.11 in every container of a user network */
const DOCKER_DNS = "0B00007F";

/** The ports something listens on in a socket table's text (Docker's resolver left out), sorted. */
export function listeningPorts(text: string): number[] {
  const ports = new Set(
    listeners(text)
      .filter((l) => l.address !== DOCKER_DNS)
      .map((l) => l.port),
  );
  return [...ports].sort((a, b) => a - b);
}
