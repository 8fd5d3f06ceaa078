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

/** Each variant once per repetition, in an order that rotates, so drift spreads over all of them. */
export async function interleaved(
  variants: Record<string, () => Promise<unknown>>,
  reps: number,
  warmup: number,
): Promise<Record<string, number[]>> {
  const names = Object.keys(variants);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < warmup + reps; i++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length] as string;
      const ms = await timed(variants[name] as () => Promise<unknown>);
      if (i >= warmup) samples[name]?.push(ms);
    }
  }
  return samples;
}
