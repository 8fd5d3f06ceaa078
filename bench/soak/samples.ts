/**
 * bench/soak's samples: the agent's RSS, workerd's RSS beside the JS heaps after a garbage collection
 * of the Worker's isolate and of the local runtime's own isolates (bench/soak/heap.ts), and the
 * HostAgent Durable Objects' storage, every `--sample-s`; and the least-squares slope they are judged by.
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { Stack } from "../../test/e2e/support/stack";
import { descendants, pidListeningOn, readProcess } from "../support/sampling";
import { type HeapSession, runtimeHeaps } from "./heap";
import { atS } from "./records";
import { HEAP_DIR, mb } from "./settings";

export interface Sample {
  atMin: number;
  agentMb: number;
  workerdMb: number;
  /** the Worker isolate's used JS heap after a garbage collection (NaN without an inspector) */
  heapMb: number;
  /** the same of workerd's other isolates, the local runtime's own (D1, R2, Workflows engines…), summed */
  runtimeHeapMb: number;
  /** per runtime isolate, its heap in MB */
  runtimeHeaps: Map<string, number>;
  hostAgentMb: number;
  /** the whole local persist directory (D1, R2, every Durable Object's and Workflow's SQLite files) */
  persistMb: number;
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await dirBytes(p);
    else total += (await stat(p).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/** The HostAgent Durable Objects' storage: their SQLite files (with WAL) in the local persist dir. */
async function hostAgentBytes(persistDir: string): Promise<number> {
  const doDir = path.join(persistDir, "v3", "do");
  let total = 0;
  for (const name of await readdir(doDir).catch(() => [] as string[])) {
    if (name.includes("HostAgent")) total += await dirBytes(path.join(doDir, name));
  }
  return total;
}

export async function workerdPid(stack: Stack): Promise<number | undefined> {
  const port = Number(new URL(stack.worker.directUrl).port);
  const candidates = (await descendants()).filter((p) => p.comm === "workerd").map((p) => p.pid);
  return pidListeningOn(port, candidates);
}

export async function sample(
  stack: Stack,
  workerd: number | undefined,
  heap: HeapSession | undefined,
): Promise<Sample> {
  const agentPid = stack.agent.child.pid;
  const rssMb = async (pid: number | undefined) =>
    pid === undefined
      ? Number.NaN
      : ((await readProcess(pid).catch(() => undefined))?.rssKb ?? Number.NaN) / 1024;
  const atMin = atS() / 60;
  // with --heap-dir, each sample's heap snapshot is kept there for bench/soak/heap-diff.ts
  const file = HEAP_DIR ? path.join(HEAP_DIR, `${atMin.toFixed(1)}min.heapsnapshot`) : undefined;
  const heapBytes = heap ? await heap.usedAfterGc(file).catch(() => Number.NaN) : Number.NaN;
  const runtimeUrl = stack.worker.runtimeInspectorUrl;
  const runtime = runtimeUrl
    ? await runtimeHeaps(runtimeUrl).catch(() => new Map<string, number>())
    : new Map();
  const runtimeMb = new Map([...runtime].map(([id, bytes]) => [id, mb(bytes)]));
  return {
    atMin,
    agentMb: await rssMb(agentPid),
    workerdMb: await rssMb(workerd),
    heapMb: mb(heapBytes),
    runtimeHeapMb: runtime.size ? [...runtimeMb.values()].reduce((a, b) => a + b, 0) : Number.NaN,
    runtimeHeaps: runtimeMb,
    hostAgentMb: mb(await hostAgentBytes(stack.worker.persistDir)),
    persistMb: mb(await dirBytes(stack.worker.persistDir)),
  };
}

/** Least-squares slope of y over x; NaN with fewer than two points. */
export function slope(points: { x: number; y: number }[]): number {
  const pts = points.filter((p) => Number.isFinite(p.y));
  if (pts.length < 2) return Number.NaN;
  const mx = pts.reduce((s, p) => s + p.x, 0) / pts.length;
  const my = pts.reduce((s, p) => s + p.y, 0) / pts.length;
  let num = 0;
  let den = 0;
  for (const p of pts) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den > 0 ? num / den : Number.NaN;
}
