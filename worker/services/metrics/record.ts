import { and, eq, ne } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import type { MetricSample } from "../../../shared/protocol";
import type { Db } from "../../db/client";
import { podMetrics, pods } from "../../db/schema";
import { MINUTE } from "../../lib/time";

/** a plan's "GB" is a GiB, as the host sizes the pod's disk (agent/disk/pod-disk.ts) */
const GIB = 1024 ** 3;

export interface DiskUse {
  podId: string;
  usedBytes: number;
  planBytes: number;
}

/** D1 binds at most 100 parameters per statement: 7 per row. */
const ROWS_PER_INSERT = 14;
/** a host clock this far behind (or any amount ahead) is not trusted with the timestamp */
const MAX_SAMPLE_AGE_MS = 10 * MINUTE;

/**
 * One tick of a host's samples into D1. Only pods placed on that host are written (an agent can
 * never write another host's pods, nor invent pods), and a sample's time is the host's, clamped to
 * the last ten minutes of the control plane's clock. Answers each written pod's disk use beside its
 * plan's disk (the disk alert's input).
 */
export async function recordMetrics(
  db: Db,
  hostId: string,
  samples: readonly MetricSample[],
  now = Date.now(),
): Promise<DiskUse[]> {
  if (samples.length === 0) return [];
  const own = await db
    .select({ id: pods.id, name: pods.name, planSlug: pods.planSlug })
    .from(pods)
    .where(and(eq(pods.hostId, hostId), ne(pods.status, "deleted")));
  const byName = new Map(own.map((p) => [p.name, p]));
  const disk = new Map<string, DiskUse>();
  const rows = samples.flatMap((s) => {
    const pod = byName.get(s.name);
    if (!pod) return [];
    const podId = pod.id;
    const plan = findPlan(pod.planSlug);
    if (plan) disk.set(podId, { podId, usedBytes: s.storage, planBytes: plan.diskGb * GIB });
    const at = Math.min(now, Math.max(now - MAX_SAMPLE_AGE_MS, s.at));
    return [
      {
        podId,
        recordedAt: new Date(at).toISOString(),
        cpuUsage: s.cpu,
        memoryUsage: s.memory,
        storageUsed: s.storage,
        networkIn: s.netIn,
        networkOut: s.netOut,
      },
    ];
  });
  const statements = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    statements.push(
      db
        .insert(podMetrics)
        .values(rows.slice(i, i + ROWS_PER_INSERT))
        .onConflictDoNothing(),
    );
  }
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
  return [...disk.values()];
}
