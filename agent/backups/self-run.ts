import { opendir, readlink } from "node:fs/promises";
import type { DockerClient } from "../docker/client";
import { HOME } from "../docker/naming";
import { listeners, readBoundedFile } from "../docker/proc-net";
import type { ServiceKind } from "./services";

/**
 * Database servers the app runs itself (docs/backups.md "Self-run database servers"): a
 * `postgres`, `mysqld`/`mariadbd` or `redis-server` process in the pod's own container (not a
 * managed sidecar) with a TCP socket listening on the pod's loopback or on every address. Found on
 * the host: the container's processes from the engine, then each one's `/proc` entries (its name,
 * its socket descriptors matched against its network namespace's TCP table, its working
 * directory), all read with fixed bounds and compared as exact strings: a tenant's process names
 * and paths never reach a pattern or a shell.
 */

export interface SelfRunServer {
  kind: ServiceKind;
  /** its lowest listening port */
  port: number;
  /** the host's pid of its first process (the postmaster, mysqld, redis-server) */
  pid: number;
  /**
   * a PostgreSQL or MySQL data directory under ~/app (its working directory), relative to ~/app:
   * kept out of the archive (its live files would be torn) and kept in place by a restore
   */
  datadir: string | null;
}

const KIND_OF_COMM: Record<string, ServiceKind> = {
  postgres: "postgresql",
  mysqld: "mysql",
  mariadbd: "mysql",
  "redis-server": "redis",
};

export const SELF_RUN_LIMITS = { processes: 4096, fds: 4096, servers: 4, tcpTableBytes: 4 * 1024 * 1024 };

/** what a database server reads as a local listener: 127.0.0.1, 0.0.0.0, ::1, ::, ::ffff:127.0.0.1 */
const LOCAL_ADDRESSES = new Set([
  "0100007F",
  "00000000",
  "00000000000000000000000001000000",
  "00000000000000000000000000000000",
  "0000000000000000FFFF00000100007F",
]);

/** the container's processes as [pid, ppid], from the engine (host pids) */
async function processes(docker: DockerClient, container: string): Promise<[number, number][]> {
  const top = (await docker.getContainer(container).top({ ps_args: "-o pid,ppid" })) as {
    Titles?: string[];
    Processes?: string[][];
  };
  const titles = top.Titles ?? [];
  const pidAt = titles.indexOf("PID");
  const ppidAt = titles.indexOf("PPID");
  if (pidAt < 0 || ppidAt < 0) return [];
  return (top.Processes ?? [])
    .slice(0, SELF_RUN_LIMITS.processes)
    .map((row) => [Number(row[pidAt]), Number(row[ppidAt])] as [number, number])
    .filter(([pid, ppid]) => Number.isInteger(pid) && pid > 0 && Number.isInteger(ppid));
}

/** the socket inodes among a process's open descriptors */
async function socketInodes(pid: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  const dir = await opendir(`/proc/${pid}/fd`, { bufferSize: 256 }).catch(() => null);
  if (!dir) return inodes;
  let seen = 0;
  try {
    // entries one by one: a process may hold a million descriptors
    for await (const fd of dir) {
      if (++seen > SELF_RUN_LIMITS.fds) break;
      const target = await readlink(`/proc/${pid}/fd/${fd.name}`).catch(() => "");
      if (target.startsWith("socket:[") && target.endsWith("]")) inodes.add(target.slice(8, -1));
    }
  } catch {
    // the process ended meanwhile
  }
  return inodes;
}

/** the local ports among `inodes` listening on a local address, from a /proc/net/tcp{,6} table */
export function listeningPorts(table: string, inodes: Set<string>): number[] {
  return listeners(table)
    .filter((l) => inodes.has(l.inode) && LOCAL_ADDRESSES.has(l.address))
    .map((l) => l.port);
}

async function portsOf(pid: number): Promise<number[]> {
  const inodes = await socketInodes(pid);
  if (inodes.size === 0) return [];
  const ports: number[] = [];
  for (const table of ["tcp", "tcp6"]) {
    const text = await readBoundedFile(`/proc/${pid}/net/${table}`, SELF_RUN_LIMITS.tcpTableBytes);
    if (text) ports.push(...listeningPorts(text, inodes));
  }
  return ports;
}

/** a working directory under ~/app (not ~/app itself), relative to it */
function underApp(cwd: string): string | null {
  const app = `${HOME}/app/`;
  if (!cwd.startsWith(app) || cwd.endsWith(" (deleted)")) return null;
  // the kernel's path: absolute, no doubled or trailing slash
  const rel = cwd.slice(app.length);
  const parts = rel.split("/");
  return parts.every((p) => p !== "" && p !== "." && p !== "..") ? rel : null;
}

/** The self-run database servers of a running pod's container, by port (at most SELF_RUN_LIMITS.servers). */
export async function findSelfRunServers(docker: DockerClient, container: string): Promise<SelfRunServer[]> {
  const procs = await processes(docker, container);
  const comm = new Map<number, string>();
  for (const [pid] of procs) comm.set(pid, ((await readBoundedFile(`/proc/${pid}/comm`, 64)) ?? "").trim());
  const servers: SelfRunServer[] = [];
  for (const [pid, ppid] of procs) {
    const name = comm.get(pid) ?? "";
    const kind = KIND_OF_COMM[name];
    // a server's own workers carry its name too: only the first of a tree is the server
    if (!kind || comm.get(ppid) === name) continue;
    const ports = await portsOf(pid);
    if (ports.length === 0) continue;
    const port = Math.min(...ports);
    if (servers.some((s) => s.port === port)) continue;
    const cwd = kind === "redis" ? "" : await readlink(`/proc/${pid}/cwd`).catch(() => "");
    servers.push({ kind, port, pid, datadir: underApp(cwd) });
    if (servers.length >= SELF_RUN_LIMITS.servers) break;
  }
  return servers.sort((a, b) => a.port - b.port);
}
