import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * A resize in flight (docs/pods.md "Resizing"): the host capacity it reserved, written in the same
 * batch as that reservation, so a request cut at any point leaves a row that says what to give back.
 * One per pod (the key), removed in the batch that records the new plan or gives the room back.
 * `cpu`, `memory_mb`, `disk_gb` are what was taken on `host_id` (the plan's growth; a shrink takes
 * nothing and gives its room back when the plan is recorded). Until `settle_after` the request that
 * made the row may still be working; after it, anyone may settle the row (services/pods/resize.ts).
 */
export const podResizes = sqliteTable(
  "pod_resizes",
  {
    podId: text("pod_id").primaryKey(),
    /** this attempt's id: every statement of the resize names it, so a settled row is never settled twice */
    token: text("token").notNull().unique(),
    hostId: text("host_id").notNull(),
    fromPlan: text("from_plan").notNull(),
    toPlan: text("to_plan").notNull(),
    cpu: real("cpu").notNull(),
    memoryMb: integer("memory_mb").notNull(),
    diskGb: integer("disk_gb").notNull(),
    /** set in the batch that records the plan, which removes the row in the same breath */
    finishing: integer("finishing", { mode: "boolean" }).notNull().default(false),
    settleAfter: text("settle_after").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("pod_resizes_settle_idx").on(t.settleAfter)],
);

export type PodResizeRow = typeof podResizes.$inferSelect;
