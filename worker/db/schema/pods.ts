import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const POD_STATUSES = ["creating", "running", "stopped", "deleted", "error", "suspended"] as const;
export type PodStatus = (typeof POD_STATUSES)[number];

/**
 * Pods. Deleted pods keep their row (status `deleted`, `deleted_at`) so the name stays reserved
 * for 7 days; `name` is unique across the whole service because it is the pod's host name.
 */
export const pods = sqliteTable(
  "pods",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull().unique(),
    // No foreign key: a deleted pod's row outlives its team while the name stays reserved.
    teamId: text("team_id").notNull(),
    preset: text("preset").notNull(),
    status: text("status", { enum: POD_STATUSES }).notNull(),
    planSlug: text("plan_slug").notNull(),
    region: text("region").notNull(),
    hostId: text("host_id"),
    /** unique per host while the pod lives; NULL once deleted so the port can be reused */
    sshPort: integer("ssh_port"),
    ip: text("ip"),
    description: text("description").notNull().default(""),
    appHealthDiagnosis: text("app_health_diagnosis"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    deletedAt: text("deleted_at"),
  },
  (t) => [
    index("pods_team_status_idx").on(t.teamId, t.status),
    // the pods list's order (newest first): a page is read off the index, not sorted from all the team's pods
    index("pods_team_created_idx").on(t.teamId, t.createdAt, t.id),
    index("pods_host_idx").on(t.hostId),
    uniqueIndex("pods_host_ssh_port_idx").on(t.hostId, t.sshPort),
  ],
);

export type PodRow = typeof pods.$inferSelect;
