import { sql } from "drizzle-orm";
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
 * The last hour of CPU and memory (percent of the plan) of many pods at once, in five-minute
 * averages: one query for a whole page of the pods list (the ids travel as one JSON parameter, so
 * a page of 100 stays under D1's bound-parameter limit), reading each pod's samples by the table's
 * primary key (pod_id, recorded_at) and handing back at most 12 rows per pod. Pods without a
 * sample in the window are absent from the map.
 */
export async function recentUsage(
  db: Db,
  podIds: readonly string[],
  now = Date.now(),
): Promise<Map<string, RecentUsage>> {
  const usage = new Map<string, RecentUsage>();
  if (podIds.length === 0) return usage;
  const sinceMs = now - SPARKLINE_WINDOW_MS;
  const since = new Date(sinceMs).toISOString();
  const rows = await db.all<{ pod_id: string; bucket: number; cpu: number; memory: number }>(sql`
    SELECT pod_id,
           CAST((CAST(strftime('%s', recorded_at) AS INTEGER) - ${Math.floor(sinceMs / 1000)}) / ${BUCKET_S} AS INTEGER) AS bucket,
           avg(cpu_usage) AS cpu,
           avg(memory_usage) AS memory
    FROM pod_metrics
    WHERE pod_id IN (SELECT value FROM json_each(${JSON.stringify(podIds)}))
      AND recorded_at >= ${since}
    GROUP BY pod_id, bucket`);
  for (const row of rows) {
    if (row.bucket < 0 || row.bucket >= SPARKLINE_POINTS) continue;
    let series = usage.get(row.pod_id);
    if (!series) {
      series = {
        cpu: new Array(SPARKLINE_POINTS).fill(null),
        memory: new Array(SPARKLINE_POINTS).fill(null),
      };
      usage.set(row.pod_id, series);
    }
    series.cpu[row.bucket] = Math.round(row.cpu * 10) / 10;
    series.memory[row.bucket] = Math.round(row.memory * 10) / 10;
  }
  return usage;
}
