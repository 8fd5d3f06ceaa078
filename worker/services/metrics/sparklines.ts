import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { HOUR } from "../../lib/time";

/** The window a sparkline covers, and how many points it has (5-minute averages of the last hour). */
export const SPARKLINE_WINDOW_MS = HOUR;
export const SPARKLINE_POINTS = 12;
const BUCKET_S = SPARKLINE_WINDOW_MS / 1000 / SPARKLINE_POINTS;

/** A pod's recent CPU and memory, oldest point first; null where no sample fell in the bucket. */
export interface RecentUsage {
  cpu: (number | null)[];
  memory: (number | null)[];
}

/**
 * Which pods to read: their ids (they travel as one JSON parameter, so a page of 100 stays under
 * D1's bound-parameter limit), or a subquery of one column named `value` holding pod ids (e.g. the
 * pods list's page, so the sparklines are read in the same batch as the page itself).
 */
export type PodSet = readonly string[] | SQL;

export const podSetSql = (pods: PodSet): SQL =>
  Array.isArray(pods) ? sql`SELECT value FROM json_each(${JSON.stringify(pods)})` : (pods as SQL);

/**
 * The statement behind `recentUsage`, a query builder to run in a `db.batch` beside others
 * (`usageFromRows` reads its answer; drizzle's D1 batch cannot carry a raw `db.all` with
 * parameters): per pod one row, its 5-minute buckets folded into one "bucket:cpu:memory,…"
 * string, so a page of 50 pods returns 50 short rows rather than 600.
 */
export function recentUsageStatement(db: Db, pods: PodSet, now = Date.now()) {
  const sinceMs = now - SPARKLINE_WINDOW_MS;
  const since = new Date(sinceMs).toISOString();
  return db
    .select({
      podId: sql<string>`pod_id`,
      points: sql<string | null>`group_concat(bucket || ':' || cpu || ':' || memory, ',')`,
    })
    .from(sql`(
      SELECT pod_id,
             CAST((CAST(strftime('%s', recorded_at) AS INTEGER) - ${Math.floor(sinceMs / 1000)}) / ${BUCKET_S} AS INTEGER) AS bucket,
             avg(cpu_usage) AS cpu,
             avg(memory_usage) AS memory
      FROM pod_metrics
      WHERE pod_id IN (${podSetSql(pods)})
        AND recorded_at >= ${since}
      GROUP BY pod_id, bucket
    )`)
    .groupBy(sql`pod_id`);
}

/** `recentUsageStatement`'s rows as a map by pod id. */
export function usageFromRows(
  rows: readonly { podId: string; points: string | null }[],
): Map<string, RecentUsage> {
  const usage = new Map<string, RecentUsage>();
  for (const { podId, points } of rows) {
    const series: RecentUsage = {
      cpu: new Array(SPARKLINE_POINTS).fill(null),
      memory: new Array(SPARKLINE_POINTS).fill(null),
    };
    for (const point of (points ?? "").split(",")) {
      const [bucket, cpu, memory] = point.split(":").map(Number);
      if (bucket === undefined || !Number.isInteger(bucket) || bucket < 0 || bucket >= SPARKLINE_POINTS)
        continue;
      series.cpu[bucket] = Math.round((cpu ?? 0) * 10) / 10;
      series.memory[bucket] = Math.round((memory ?? 0) * 10) / 10;
    }
    if (series.cpu.some((v) => v !== null)) usage.set(podId, series);
  }
  return usage;
}

/**
 * The last hour of CPU and memory (percent of the plan) of many pods at once, in five-minute
 * averages: one query for a whole page of the pods list, reading each pod's samples by the table's
 * primary key (pod_id, recorded_at). Pods without a sample in the window are absent from the map.
 */
export async function recentUsage(db: Db, pods: PodSet, now = Date.now()): Promise<Map<string, RecentUsage>> {
  if (Array.isArray(pods) && pods.length === 0) return new Map();
  return usageFromRows(await recentUsageStatement(db, pods, now));
}
