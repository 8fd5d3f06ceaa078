import { and, asc, desc, eq, gte, sql } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { podMetrics, podMetricsHourly } from "../../db/schema";
import { HOUR } from "../../lib/time";
import { findTeamPod } from "../pods/lookup";

/** The spec's Metrics record. */
export interface MetricsView {
  cpu_usage: number;
  memory_usage: number;
  storage_used: number;
  network_in: number;
  network_out: number;
  recorded_at: string;
}

export const MAX_HISTORY_HOURS = 720;
/** up to this many hours the history is the raw samples; beyond, hourly rollups */
export const RAW_HISTORY_HOURS = 24;

const floorHour = (ms: number) => Math.floor(ms / HOUR) * HOUR;
const round2 = (n: number) => Math.round(n * 100) / 100;

const viewOf = (r: {
  cpuUsage: number;
  memoryUsage: number;
  storageUsed: number;
  networkIn: number;
  networkOut: number;
  recordedAt: string;
}): MetricsView => ({
  cpu_usage: round2(r.cpuUsage),
  memory_usage: round2(r.memoryUsage),
  storage_used: Math.round(r.storageUsed),
  network_in: Math.round(r.networkIn),
  network_out: Math.round(r.networkOut),
  recorded_at: r.recordedAt,
});

const rawColumns = {
  cpuUsage: podMetrics.cpuUsage,
  memoryUsage: podMetrics.memoryUsage,
  storageUsed: podMetrics.storageUsed,
  networkIn: podMetrics.networkIn,
  networkOut: podMetrics.networkOut,
  recordedAt: podMetrics.recordedAt,
};

/** The newest sample of the team's pod, or null when none was ever recorded. */
export async function latestMetrics(
  db: Db,
  teamId: string,
  name: string,
): Promise<Result<MetricsView | null>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const [row] = await db
    .select(rawColumns)
    .from(podMetrics)
    .where(eq(podMetrics.podId, found.value.pod.id))
    .orderBy(desc(podMetrics.recordedAt))
    .limit(1);
  return ok(row ? viewOf(row) : null);
}

/**
 * The last `hours` of the team's pod, oldest first: every sample for up to RAW_HISTORY_HOURS,
 * beyond that one record per hour (`recorded_at` = the hour's start; percentages averaged,
 * storage the hour's largest figure, network bytes summed). The hours the scheduled rollup has
 * not reached yet are aggregated from the raw samples on the fly.
 */
export async function metricsHistory(
  db: Db,
  teamId: string,
  name: string,
  hours: number,
  now = Date.now(),
): Promise<Result<MetricsView[]>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const podId = found.value.pod.id;
  const since = now - hours * HOUR;

  if (hours <= RAW_HISTORY_HOURS) {
    const rows = await db
      .select(rawColumns)
      .from(podMetrics)
      .where(and(eq(podMetrics.podId, podId), gte(podMetrics.recordedAt, new Date(since).toISOString())))
      .orderBy(asc(podMetrics.recordedAt));
    return ok(rows.map(viewOf));
  }

  const sinceHour = new Date(floorHour(since)).toISOString();
  const rolled = await db
    .select({
      cpuUsage: podMetricsHourly.cpuUsage,
      memoryUsage: podMetricsHourly.memoryUsage,
      storageUsed: podMetricsHourly.storageUsed,
      networkIn: podMetricsHourly.networkIn,
      networkOut: podMetricsHourly.networkOut,
      recordedAt: podMetricsHourly.hour,
    })
    .from(podMetricsHourly)
    .where(and(eq(podMetricsHourly.podId, podId), gte(podMetricsHourly.hour, sinceHour)))
    .orderBy(asc(podMetricsHourly.hour));
  const lastRolled = rolled.at(-1)?.recordedAt;
  const rawFrom = lastRolled ? new Date(Date.parse(lastRolled) + HOUR).toISOString() : sinceHour;
  const hour = sql<string>`substr(${podMetrics.recordedAt}, 1, 13) || ':00:00.000Z'`;
  const pending = await db
    .select({
      cpuUsage: sql<number>`avg(${podMetrics.cpuUsage})`,
      memoryUsage: sql<number>`avg(${podMetrics.memoryUsage})`,
      storageUsed: sql<number>`max(${podMetrics.storageUsed})`,
      networkIn: sql<number>`sum(${podMetrics.networkIn})`,
      networkOut: sql<number>`sum(${podMetrics.networkOut})`,
      recordedAt: hour,
    })
    .from(podMetrics)
    .where(and(eq(podMetrics.podId, podId), gte(podMetrics.recordedAt, rawFrom)))
    .groupBy(hour)
    .orderBy(hour);
  return ok([...rolled, ...pending].map(viewOf));
}
