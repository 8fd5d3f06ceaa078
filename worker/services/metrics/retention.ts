import { and, eq, gte, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { podMetrics, podMetricsHourly, pods } from "../../db/schema";
import { DAY, HOUR } from "../../lib/time";

export const RAW_RETENTION_MS = 2 * DAY;
export const ROLLUP_RETENTION_MS = 30 * DAY;
/** each run (re)computes the rollups of this many complete hours: late samples and missed runs */
const ROLLUP_WINDOW_HOURS = 6;

/**
 * The scheduled upkeep of pod metrics: hourly rollups of the last complete hours (an upsert, so
 * running it twice or late is harmless), then the retention: raw samples older than 48 hours,
 * rollups older than 30 days, and everything of deleted pods.
 */
export async function rollUpAndPruneMetrics(db: Db, now = Date.now()): Promise<void> {
  const hourStart = Math.floor(now / HOUR) * HOUR;
  const from = new Date(hourStart - ROLLUP_WINDOW_HOURS * HOUR).toISOString();
  const to = new Date(hourStart).toISOString();
  const hour = sql<string>`substr(${podMetrics.recordedAt}, 1, 13) || ':00:00.000Z'`;
  const deletedPods = db.select({ id: pods.id }).from(pods).where(eq(pods.status, "deleted"));
  await db.batch([
    db
      .insert(podMetricsHourly)
      .select(
        db
          .select({
            podId: podMetrics.podId,
            hour: hour.as("hour"),
            cpuUsage: sql<number>`avg(${podMetrics.cpuUsage})`.as("cpu_usage"),
            memoryUsage: sql<number>`avg(${podMetrics.memoryUsage})`.as("memory_usage"),
            storageUsed: sql<number>`max(${podMetrics.storageUsed})`.as("storage_used"),
            networkIn: sql<number>`sum(${podMetrics.networkIn})`.as("network_in"),
            networkOut: sql<number>`sum(${podMetrics.networkOut})`.as("network_out"),
            samples: sql<number>`count(*)`.as("samples"),
          })
          .from(podMetrics)
          .where(and(gte(podMetrics.recordedAt, from), lt(podMetrics.recordedAt, to)))
          .groupBy(podMetrics.podId, hour),
      )
      .onConflictDoUpdate({
        target: [podMetricsHourly.podId, podMetricsHourly.hour],
        set: {
          cpuUsage: sql`excluded.cpu_usage`,
          memoryUsage: sql`excluded.memory_usage`,
          storageUsed: sql`excluded.storage_used`,
          networkIn: sql`excluded.network_in`,
          networkOut: sql`excluded.network_out`,
          samples: sql`excluded.samples`,
        },
      }),
    db.delete(podMetrics).where(lt(podMetrics.recordedAt, new Date(now - RAW_RETENTION_MS).toISOString())),
    db
      .delete(podMetricsHourly)
      .where(lt(podMetricsHourly.hour, new Date(now - ROLLUP_RETENTION_MS).toISOString())),
    db.delete(podMetrics).where(inArray(podMetrics.podId, deletedPods)),
    db.delete(podMetricsHourly).where(inArray(podMetricsHourly.podId, deletedPods)),
  ]);
}
