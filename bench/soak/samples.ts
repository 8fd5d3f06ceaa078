/**
 * bench/soak's samples: the agent's RSS, workerd's RSS and the HostAgent Durable Objects' storage,
 * every `--sample-s`; and the least-squares slope they are judged by.
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { Stack } from "../../test/e2e/support/stack";
import { descendants, pidListeningOn, readProcess } from "../support/sampling";
import { atS } from "./records";
import { mb } from "./settings";

export interface Sample {
  atMin: number;
  agentMb: number;
  workerdMb: number;
  hostAgentMb: number;
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

export async function sample(stack: Stack, workerd: number | undefined): Promise<Sample> {
  const agentPid = stack.agent.child.pid;
  const rssMb = async (pid: number | undefined) =>
    pid === undefined
      ? Number.NaN
      : ((await readProcess(pid).catch(() => undefined))?.rssKb ?? Number.NaN) / 1024;
  return {
    atMin: atS() / 60,
    agentMb: await rssMb(agentPid),
    workerdMb: await rssMb(workerd),
    hostAgentMb: mb(await hostAgentBytes(stack.worker.persistDir)),
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
