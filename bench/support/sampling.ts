import { readdir, readFile, readlink } from "node:fs/promises";
import { availableParallelism, loadavg } from "node:os";
import { fmt } from "../stats";

/** The machine's CPUs and 1-minute load, flagged when it is busier than its CPUs. */
export function machineLoad(): string {
  const cpus = availableParallelism();
  const [load1 = 0] = loadavg();
  return `${cpus} CPUs, load average ${fmt(load1, 1)}${load1 > cpus ? " (busy machine: figures are inflated)" : ""}`;
}

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/**
 * Work around each run of a variant, outside its timing: clearing what the last run left, reading
 * CPU (bench/support/cpu.ts). `measured` is false for the warm-up runs.
 */
export interface RunHooks {
  before(variant: string): Promise<void>;
  after(variant: string, measured: boolean): Promise<void>;
}

/** Each variant once per repetition, in an order that rotates, so drift spreads over all of them. */
export async function interleaved(
  variants: Record<string, () => Promise<unknown>>,
  reps: number,
  warmup: number,
  hooks?: RunHooks,
): Promise<Record<string, number[]>> {
  const names = Object.keys(variants);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < warmup + reps; i++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length] as string;
      await hooks?.before(name);
      const ms = await timed(variants[name] as () => Promise<unknown>);
      await hooks?.after(name, i >= warmup);
      if (i >= warmup) samples[name]?.push(ms);
    }
  }
  return samples;
}

/** Linux's USER_HZ: the unit of the CPU times in /proc/<pid>/stat (100 on every mainstream kernel). */
const CLOCK_TICKS_PER_SECOND = 100;

export interface ProcessReading {
  /** performance.now() when read */
  at: number;
  /** user + system CPU of all the process's threads, in seconds */
  cpuSeconds: number;
  rssKb: number;
  /** peak RSS so far (VmHWM) */
  hwmKb: number;
}

/** CPU time and memory of a process, from /proc. */
export async function readProcess(pid: number): Promise<ProcessReading> {
  const [stat, status] = await Promise.all([
    readFile(`/proc/${pid}/stat`, "utf8"),
    readFile(`/proc/${pid}/status`, "utf8"),
  ]);
  // The command name (field 2) may hold spaces and parentheses: the fields after it start after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return {
    at: performance.now(),
    cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND,
    rssKb: kb("VmRSS"),
    hwmKb: kb("VmHWM"),
  };
}

/** Percent of one core the process used between two readings. */
export const cpuPercent = (from: ProcessReading, to: ProcessReading): number =>
  ((to.cpuSeconds - from.cpuSeconds) / ((to.at - from.at) / 1000)) * 100;

/** Every process below `root` (children, grandchildren …), by the parent pid in /proc/<pid>/stat. */
export async function descendants(root = process.pid): Promise<{ pid: number; comm: string }[]> {
  const parentOf = new Map<number, { ppid: number; comm: string }>();
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parentOf.set(Number(entry), { ppid, comm });
    } catch {
      // gone meanwhile
    }
  }
  const below = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, { ppid }] of parentOf) {
      if (!below.has(pid) && below.has(ppid)) {
        below.add(pid);
        grew = true;
      }
    }
  }
  below.delete(root);
  return [...below].map((pid) => ({ pid, comm: parentOf.get(pid)?.comm ?? "" }));
}

/** Which of `candidates` holds a socket listening on TCP `port` (from /proc/net/tcp and the fds). */
export async function pidListeningOn(
  port: number,
  candidates: readonly number[],
): Promise<number | undefined> {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = await readFile(table, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // st 0A = LISTEN; the inode is the 10th column
      if (local && cols[3] === "0A" && Number.parseInt(local.split(":")[1] ?? "", 16) === port) {
        inodes.add(`socket:[${cols[9]}]`);
      }
    }
  }
  for (const pid of candidates) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
      if (inodes.has(target)) return pid;
    }
  }
  return undefined;
}
