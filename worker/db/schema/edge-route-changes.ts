import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The edge's change feed (docs/edge.md "The route cache and its invalidation"): one row per change
 * of what a visitor's host name routes to, written by SQL triggers (migration
 * `0034_edge_route_triggers.sql`) on `pods` (status, host, name), `domains` (status, pod, name) and
 * `hosts` (status, ingress origin, token), whoever makes the change: a request, a Workflow, the
 * agent's reports, the cron. `key` is the route cache's key (`p:<pod name>`, `d:<domain>`) or `*` for
 * every route (a host's change). Each isolate reads the rows after the last `seq` it saw about once a
 * second and drops those entries; the cron deletes rows older than ten minutes.
 */
export const edgeRouteChanges = sqliteTable("edge_route_changes", {
  seq: integer("seq").primaryKey({ autoIncrement: true }),
  key: text("key").notNull(),
  /** unix ms, for the cron's pruning */
  at: integer("at").notNull(),
});

export type EdgeRouteChangeRow = typeof edgeRouteChanges.$inferSelect;
