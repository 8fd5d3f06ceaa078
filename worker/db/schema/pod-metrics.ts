import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Pod metrics (spec: Metrics), as the hosts' agents sample them: one raw row per pod and sampling
 * interval, kept 48 hours, and one rollup per pod and hour (averages of the percentages, the
 * largest storage figure, sums of the network bytes), kept 30 days. The scheduled job in
 * worker/services/metrics/retention.ts rolls up and prunes. Times are ISO 8601 UTC strings
 * (`toISOString`, so they sort as text); a rollup's `hour` is the start of its hour.
 */
export const podMetrics = sqliteTable(
  "pod_metrics",
  {
    podId: text("pod_id").notNull(),
    recordedAt: text("recorded_at").notNull(),
    /** percent of the plan's CPUs, averaged over the interval */
    cpuUsage: real("cpu_usage").notNull(),
    /** percent of the plan's memory */
    memoryUsage: real("memory_usage").notNull(),
    /** bytes on disk of the pod's home */
    storageUsed: integer("storage_used").notNull(),
    /** bytes received / sent during the interval */
    networkIn: integer("network_in").notNull(),
    networkOut: integer("network_out").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.podId, t.recordedAt] }),
    index("pod_metrics_recorded_idx").on(t.recordedAt),
  ],
);

export const podMetricsHourly = sqliteTable(
  "pod_metrics_hourly",
  {
    podId: text("pod_id").notNull(),
    hour: text("hour").notNull(),
    cpuUsage: real("cpu_usage").notNull(),
    memoryUsage: real("memory_usage").notNull(),
    storageUsed: integer("storage_used").notNull(),
    networkIn: integer("network_in").notNull(),
    networkOut: integer("network_out").notNull(),
    /** how many raw samples the hour had */
    samples: integer("samples").notNull(),
  },
  (t) => [primaryKey({ columns: [t.podId, t.hour] }), index("pod_metrics_hourly_hour_idx").on(t.hour)],
);

export type PodMetricsRow = typeof podMetrics.$inferSelect;
