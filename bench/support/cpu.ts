import { readdir, readFile } from "node:fs/promises";
import { fmt, formatTable, median } from "../stats";
import type { RunHooks } from "./sampling";

/**
 * Where a variant's CPU goes, process by process: each group's CPU seconds (user + system, with the
 * children it has waited for: a `runc exec` and the pod's process count towards the agent that
 * started them, curl and the docker CLI towards the bench) read from /proc before and after every
 * run of a variant. On a 2-core machine a transfer is as fast as the CPU it needs allows, so this is
 * the profile that says which hop to make cheaper. The kernel counts in ticks of 10 ms: read it over
 * several repetitions.
 */

/** Linux's USER_HZ: the unit of the CPU times in /proc/<pid>/stat. */
const TICKS_PER_SECOND = 100;

/** which of a process's CPU times: its own, its waited-for children's, or both */
export type CpuPart = "self" | "children" | "all";

/** CPU seconds of `pid` (0 once it is gone) */
async function cpuSeconds(pid: number, part: CpuPart): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields 14–17 of stat(5): utime, stime, cutime, cstime (counted from field 3 here)
    const self = Number(f[11]) + Number(f[12]);
    const children = Number(f[13]) + Number(f[14]);
    return (part === "self" ? self : part === "children" ? children : self + children) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Pids whose command name is one of `names` (a daemon such as dockerd or containerd-shim). */
export async function pidsNamed(...names: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const comm = await readFile(`/proc/${entry}/comm`, "utf8").catch(() => "");
    if (names.some((n) => comm.trim().startsWith(n))) out.push(Number(entry));
  }
  return out;
}

/** A group of processes whose CPU is summed */
export interface CpuGroup {
  name: string;
  pids: number[];
  /** default "all" */
  part?: CpuPart;
}

/** Records each group's CPU during every timed run of a variant (pass it to `interleaved` as hooks). */
export class CpuMeter implements RunHooks {
  /** variant → group → CPU ms per run */
  private readonly samples = new Map<string, Map<string, number[]>>();
  private last: number[] = [];

  constructor(private readonly groups: CpuGroup[]) {}

  private async read(): Promise<number[]> {
    return Promise.all(
      this.groups.map(async (g) => {
        let sum = 0;
        for (const pid of g.pids) sum += await cpuSeconds(pid, g.part ?? "all");
        return sum;
      }),
    );
  }

  async before(): Promise<void> {
    this.last = await this.read();
  }

  async after(variant: string, measured: boolean): Promise<void> {
    if (!measured) return;
    const now = await this.read();
    let byGroup = this.samples.get(variant);
    if (!byGroup) {
      byGroup = new Map();
      this.samples.set(variant, byGroup);
    }
    for (const [i, g] of this.groups.entries()) {
      const list = byGroup.get(g.name) ?? [];
      list.push(((now[i] ?? 0) - (this.last[i] ?? 0)) * 1000);
      byGroup.set(g.name, list);
    }
  }

  /** Every variant's CPU per run by group (medians, ms) and their sum. */
  table(): string {
    const names = this.groups.map((g) => g.name);
    const rows = [...this.samples].map(([variant, byGroup]) => {
      const per = names.map((n) => median(byGroup.get(n) ?? []));
      return [
        variant,
        ...per.map((x) => fmt(x, 0)),
        fmt(
          per.reduce((a, b) => a + b, 0),
          0,
        ),
      ];
    });
    return formatTable(["CPU ms per run (p50)", ...names, "sum"], rows);
  }
}
