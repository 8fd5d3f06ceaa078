import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const MOVE_KINDS = ["evacuate", "lost"] as const;
export type MoveKind = (typeof MOVE_KINDS)[number];
export const MOVE_STATUSES = ["queued", "moving", "done", "error", "skipped"] as const;
export type MoveStatus = (typeof MOVE_STATUSES)[number];

/**
 * A pod leaving a host (docs/hosts.md "Emptying a host"): `evacuate` copies it live from its host,
 * `lost` recreates it from its latest verified backup. One row per pod and request, run one at a
 * time per host by the pod-move workflow (instance id = the row's id). `skipped`: a lost host's pod
 * without a verified backup, said so rather than recreated empty.
 */
export const podMoves = sqliteTable(
  "pod_moves",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    podName: text("pod_name").notNull(),
    kind: text("kind", { enum: MOVE_KINDS }).notNull(),
    status: text("status", { enum: MOVE_STATUSES }).notNull(),
    fromHostId: text("from_host_id").notNull(),
    toHostId: text("to_host_id"),
    sshPort: integer("ssh_port"),
    /** the backup a `lost` move restored from (or an evacuation moved the databases with) */
    backupId: text("backup_id"),
    backupAt: text("backup_at"),
    /** from the pod's last answer on the old host to its first on the new one */
    downtimeMs: integer("downtime_ms"),
    reason: text("reason"),
    createdAt: text("created_at").notNull(),
    endedAt: text("ended_at"),
  },
  (t) => [
    index("pod_moves_from_host_idx").on(t.fromHostId, t.createdAt),
    // a pod moves once at a time: a second request while one is unfinished loses the insert
    uniqueIndex("pod_moves_one_open_idx").on(t.podId).where(sql`status IN ('queued', 'moving')`),
  ],
);
export type PodMoveRow = typeof podMoves.$inferSelect;
