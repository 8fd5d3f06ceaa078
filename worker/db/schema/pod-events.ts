import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** A pod's activity log (spec: Events). `metadata` is a JSON string, null when there is none. */
export const podEvents = sqliteTable(
  "pod_events",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    type: text("type").notNull(),
    message: text("message").notNull(),
    metadata: text("metadata"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("pod_events_pod_created_idx").on(t.podId, t.createdAt)],
);
