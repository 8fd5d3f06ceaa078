import { integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const CODING_AGENT_STATUSES = ["installing", "installed", "error"] as const;
export type CodingAgentStatus = (typeof CODING_AGENT_STATUSES)[number];

/**
 * Coding agents installed in pods (docs/coding-agents.md), one row per pod and catalog agent. The
 * status is the install's (`installing` → `installed` | `error`); the row goes when the agent is
 * removed and with its pod (worker/services/pods/remove.ts). No credential is ever stored: the
 * agent signs in inside the pod.
 */
export const podCodingAgents = sqliteTable(
  "pod_coding_agents",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    /** the catalog's slug (shared/coding-agents.ts) */
    slug: text("slug").notNull(),
    status: text("status", { enum: CODING_AGENT_STATUSES }).notNull(),
    /** what was asked for: an exact version or a dist-tag */
    requestedVersion: text("requested_version").notNull(),
    /** what the host installed; null until then */
    version: text("version"),
    /** the Node major it runs on, and whether that is pinned beside the pod's runtime */
    nodeMajor: integer("node_major"),
    nodePinned: integer("node_pinned", { mode: "boolean" }),
    errorMsg: text("error_msg"),
    /** when the install was asked for, then when it finished */
    installedAt: text("installed_at").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("pod_coding_agents_pod_slug_idx").on(t.podId, t.slug)],
);

export type PodCodingAgentRow = typeof podCodingAgents.$inferSelect;
