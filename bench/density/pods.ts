/**
 * bench/density's pods through the API, and the bench host's registered capacity in D1 (the
 * capacity raised to overcommit, and which resource ran out when placement said no).
 */
import { d1Execute } from "../../scripts/lib/d1";
import type { Plan } from "../../shared/catalog";
import type { ApiClient } from "../../test/e2e/support/api";
import { type Stack, sleep } from "../../test/e2e/support/stack";
import { now, POLL_MS } from "./settings";

interface HostRow {
  cpu: number;
  memory_mb: number;
  disk_gb: number;
  allocated_cpu: number;
  allocated_memory_mb: number;
  allocated_disk_gb: number;
}

export const setCapacity = (stack: Stack, cpu: number, memoryMb: number, diskGb: number) =>
  d1Execute(
    `UPDATE hosts SET cpu = ${cpu}, memory_mb = ${memoryMb}, disk_gb = ${diskGb} WHERE id = '${stack.hostId}'`,
    { persistTo: stack.worker.persistDir },
  );

export async function hostRow(stack: Stack): Promise<HostRow> {
  const [row] = await d1Execute<HostRow>(
    `SELECT cpu, memory_mb, disk_gb, allocated_cpu, allocated_memory_mb, allocated_disk_gb FROM hosts WHERE id = '${stack.hostId}'`,
    { persistTo: stack.worker.persistDir },
  );
  if (!row) throw new Error("the bench host's row is gone");
  return row;
}

/** Which of the registered resources has no room left for another pod of `plan`. */
export const exhausted = (h: HostRow, plan: Plan) =>
  [
    h.cpu - h.allocated_cpu < plan.cpu ? `cpu (${h.allocated_cpu} of ${h.cpu} allocated)` : "",
    h.memory_mb - h.allocated_memory_mb < plan.memoryMb
      ? `memory (${h.allocated_memory_mb} of ${h.memory_mb} MB allocated)`
      : "",
    h.disk_gb - h.allocated_disk_gb < plan.diskGb
      ? `disk (${h.allocated_disk_gb} of ${h.disk_gb} GB allocated)`
      : "",
  ]
    .filter(Boolean)
    .join(", ") || "none of cpu, memory, disk";

export interface PodList {
  total: number;
  status_counts: Record<string, number>;
  pods: { name: string; status: string }[];
}

/** POSTs the pods; null when all were accepted, else why not (status and message). */
export async function post(api: ApiClient, names: string[]): Promise<string | null> {
  for (const name of names) {
    const res = await api.post("/api/pods", { name, preset: "static" });
    if (res.status !== 202)
      return `POST /api/pods ${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
  }
  return null;
}

/** Until `expected` pods are running (the list's counts, from D1); throws on a pod in `error`. */
export async function allRunning(api: ApiClient, expected: number, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api.get<PodList>("/api/pods?limit=1");
    const counts = res.body?.status_counts ?? {};
    if ((counts.error ?? 0) > 0) {
      const failed = await api.get<PodList>("/api/pods?limit=100");
      const pod = failed.body.pods.find((p) => p.status === "error");
      const events = pod ? await api.get(`/api/pods/${pod.name}/events?limit=5`) : undefined;
      throw new Error(
        `pod ${pod?.name ?? "?"} ended in error: ${JSON.stringify(events?.body).slice(0, 600)}`,
      );
    }
    if ((counts.running ?? 0) >= expected) return;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${expected} running pods: ${JSON.stringify(counts)}`);
    await sleep(250);
  }
}

/** One pod: POST, then the newest page of the list every 20 ms until it says running; ms. */
export async function createOne(api: ApiClient, name: string): Promise<number> {
  const t0 = now();
  const reason = await post(api, [name]);
  if (reason) throw new Error(reason);
  for (;;) {
    const res = await api.get<PodList>("/api/pods?limit=5");
    const status = res.body?.pods?.find((p) => p.name === name)?.status;
    if (status === "running") return now() - t0;
    if (status === "error") throw new Error(`pod ${name} ended in error`);
    if (now() - t0 > 120_000) throw new Error(`pod ${name} not running after 120 s`);
    await sleep(POLL_MS);
  }
}
