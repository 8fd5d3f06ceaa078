import { readFile } from "node:fs/promises";
import { cpus as hostCpus, totalmem } from "node:os";
import { readKernelFile } from "./kernel-file";

/**
 * A running container's resource counters read straight from the kernel, the same files the engine
 * reads for `docker stats` (its cgroup's CPU time, memory and limits; its network namespace's
 * interface counters through one of its processes), without asking the engine. The periodic watch
 * reads every pod this way in one pass: a stats call per pod and tick made the agent's and the
 * engine's idle work grow with the number of pods (issue #17 item 5).
 *
 * The cgroup is found from the process (`/proc/<pid>/cgroup`), so the engine's cgroup driver
 * (cgroupfs `/docker/<id>` or systemd `docker-<id>.scope`) and the cgroup version (v1 controllers,
 * v2 unified) do not matter; the path must name the container's id, so a pid the kernel gave to
 * another process since the list is refused rather than read.
 */

export interface CgroupReading {
  /** ms since the epoch */
  readAt: number;
  /** the cgroup's cumulative CPU time, ns */
  cpuNs: number;
  /** CPUs the cgroup may use (its CFS quota), or every CPU of the host when it has none */
  cpus: number;
  /** memory in use, less the inactive page cache (what `docker stats` shows) */
  memoryUsed: number;
  /** the cgroup's memory limit (at most the host's memory, as the engine reports it) */
  memoryLimit: number;
  /** bytes received / sent on the container's interfaces (loopback left out) */
  rx: number;
  tx: number;
}

interface Mounts {
  /** v1: controller → [mount point, mount root] */
  v1: Map<string, [string, string]>;
  /** the unified hierarchy's mount point and root, when there is one */
  v2: [string, string] | null;
}

let mounts: Promise<Mounts> | undefined;

/** Where the cgroup hierarchies are mounted, read once (`/proc/self/mountinfo`). */
function cgroupMounts(): Promise<Mounts> {
  mounts ??= readFile("/proc/self/mountinfo", "utf8").then(parseCgroupMounts);
  return mounts;
}

/**
 * mountinfo lines: `<id> <parent> <dev> <root> <mount point> <options> [optional…] - <fstype> <source> <super options>`.
 */
export function parseCgroupMounts(mountinfo: string): Mounts {
  const v1 = new Map<string, [string, string]>();
  let v2: [string, string] | null = null;
  for (const line of mountinfo.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const fields = left.split(" ");
    const root = fields[3];
    const point = fields[4]?.replace(/\\040/g, " ");
    const [fstype, , superOptions = ""] = right.split(" ");
    if (!root || !point) continue;
    if (fstype === "cgroup2") v2 ??= [point, root];
    else if (fstype === "cgroup") {
      for (const option of superOptions.split(",")) if (!v1.has(option)) v1.set(option, [point, root]);
    }
  }
  return { v1, v2 };
}

/** `/proc/<pid>/cgroup` lines `<n>:<controllers>:<path>`: controller → path ("" for v2's `0::`). */
export function parseProcCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split("\n")) {
    const first = line.indexOf(":");
    const second = line.indexOf(":", first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    for (const c of controllers === "" ? [""] : controllers.split(",")) paths.set(c, path);
  }
  return paths;
}

function dirOf([point, root]: [string, string], path: string): string {
  // A mount of a sub-tree (a cgroup namespace) shows paths relative to its own root.
  const rel = root !== "/" && path.startsWith(root) ? path.slice(root.length) : path;
  return `${point}${rel}`;
}

const read = readKernelFile;
const int = (text: string, what: string): number => {
  const n = Number(text.trim());
  if (!Number.isFinite(n)) throw new Error(`${what}: not a number: ${text.slice(0, 40)}`);
  return n;
};
/** `key value` lines (memory.stat, cpu.stat): a plain line scan, no pattern built per call */
const statValue = (text: string, key: string): number | undefined => {
  const prefix = `${key} `;
  for (const line of text.split("\n")) {
    if (!line.startsWith(prefix)) continue;
    const n = Number(line.slice(prefix.length));
    return Number.isInteger(n) && n >= 0 ? n : undefined;
  }
  return undefined;
};

/** `/proc/<pid>/net/dev`: rx bytes is the first column after the name, tx bytes the ninth. */
export function parseNetDev(text: string): { rx: number; tx: number } {
  let rx = 0;
  let tx = 0;
  for (const line of text.split("\n").slice(2)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    if (line.slice(0, colon).trim() === "lo") continue;
    const cols = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    rx += cols[0] ?? 0;
    tx += cols[8] ?? 0;
  }
  return { rx, tx };
}

/**
 * The counters of the container `containerId` whose process `pid` is (its init, from the list's
 * inspect). Throws when the process is gone, belongs to another cgroup, or the files are unreadable:
 * the caller asks the engine instead.
 */
export async function readContainerCgroup(pid: number, containerId: string): Promise<CgroupReading> {
  const { v1, v2 } = await cgroupMounts();
  const paths = parseProcCgroup(read(`/proc/${pid}/cgroup`));
  const memoryPath = paths.get("memory");
  const cpuPath = paths.get("cpuacct");
  const v1Memory = v1.get("memory");
  const v1Cpuacct = v1.get("cpuacct");
  const v1Cpu = v1.get("cpu");
  const { rx, tx } = parseNetDev(read(`/proc/${pid}/net/dev`));
  const readAt = Date.now();

  let cpuNs: number;
  let quota: number | null;
  let usage: number;
  let inactiveFile: number;
  let limit: number;
  if (memoryPath !== undefined && cpuPath !== undefined && v1Memory && v1Cpuacct && v1Cpu) {
    if (!memoryPath.includes(containerId) || !cpuPath.includes(containerId))
      throw new Error(`process ${pid} is not in container ${containerId.slice(0, 12)}'s cgroup`);
    const mem = dirOf(v1Memory, memoryPath);
    const cpuDir = dirOf(v1Cpu, paths.get("cpu") ?? cpuPath);
    const acct = read(`${dirOf(v1Cpuacct, cpuPath)}/cpuacct.usage`);
    const q = read(`${cpuDir}/cpu.cfs_quota_us`);
    const period = read(`${cpuDir}/cpu.cfs_period_us`);
    const used = read(`${mem}/memory.usage_in_bytes`);
    const stat = read(`${mem}/memory.stat`);
    const max = read(`${mem}/memory.limit_in_bytes`);
    cpuNs = int(acct, "cpuacct.usage");
    const quotaUs = int(q, "cpu.cfs_quota_us");
    const periodUs = int(period, "cpu.cfs_period_us");
    quota = quotaUs > 0 && periodUs > 0 ? quotaUs / periodUs : null;
    usage = int(used, "memory.usage_in_bytes");
    inactiveFile = statValue(stat, "total_inactive_file") ?? statValue(stat, "inactive_file") ?? 0;
    limit = int(max, "memory.limit_in_bytes");
  } else {
    const unified = paths.get("");
    if (unified === undefined || !v2) throw new Error(`no cgroup of process ${pid} found`);
    if (!unified.includes(containerId))
      throw new Error(`process ${pid} is not in container ${containerId.slice(0, 12)}'s cgroup`);
    const dir = dirOf(v2, unified);
    const cpuStat = read(`${dir}/cpu.stat`);
    const cpuMax = read(`${dir}/cpu.max`);
    const current = read(`${dir}/memory.current`);
    const stat = read(`${dir}/memory.stat`);
    const memMax = read(`${dir}/memory.max`);
    const usec = statValue(cpuStat, "usage_usec");
    if (usec === undefined) throw new Error("cpu.stat has no usage_usec");
    cpuNs = usec * 1000;
    const [q = "max", period = "100000"] = cpuMax.trim().split(/\s+/);
    quota = q === "max" ? null : int(q, "cpu.max") / int(period, "cpu.max");
    usage = int(current, "memory.current");
    inactiveFile = statValue(stat, "inactive_file") ?? 0;
    limit = memMax.trim() === "max" ? Number.POSITIVE_INFINITY : int(memMax, "memory.max");
  }
  return {
    readAt,
    cpuNs,
    cpus: quota ?? (hostCpus().length || 1),
    memoryUsed: Math.max(0, usage - inactiveFile),
    memoryLimit: Math.min(limit, totalmem()),
    rx,
    tx,
  };
}

/**
 * When the kernel started process `pid` (field 22 of `/proc/<pid>/stat`, clock ticks since boot), or
 * null when there is no such process: with the pid it names one process for good, pids being reused.
 */
export async function processStart(pid: number): Promise<string | null> {
  if (!(pid > 0)) return null;
  try {
    const stat = read(`/proc/${pid}/stat`);
    // the command name (field 2) may hold spaces and parentheses: count from its closing one
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] ?? null;
  } catch {
    return null;
  }
}
