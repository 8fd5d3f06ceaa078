import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The audit log (docs/audit.md): one row per change made through the API (the dashboard and the CLI
 * call it), MCP or the OAuth consent pages, with who made it, with which credential, from where, on
 * what, and how it ended. Rows are written after the response (worker/services/audit/record.ts) and
 * deleted by the cron once past the team's retention (services/audit/retention.ts).
 */
export const AUDIT_CREDENTIALS = ["session", "api_token", "connector"] as const;
export type AuditCredential = (typeof AUDIT_CREDENTIALS)[number];

export const auditEvents = sqliteTable(
  "audit_events",
  {
    /** `aud_…` */
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    /** ISO time of the change; the log is ordered by (at, id), newest first */
    at: text("at").notNull(),
    actorId: text("actor_id").notNull(),
    actorEmail: text("actor_email").notNull(),
    credential: text("credential", { enum: AUDIT_CREDENTIALS }).notNull(),
    /** an API token's prefix, a connector's client name; null for a session */
    credentialLabel: text("credential_label"),
    ip: text("ip"),
    /** a stable dotted name from AUDIT_ACTIONS (services/audit/actions.ts) */
    action: text("action").notNull(),
    /** the pod's name when the change was on a pod (the `pod` filter) */
    pod: text("pod"),
    /** what else it named: an id, a key's name, a path (bounded) */
    target: text("target"),
    outcome: text("outcome", { enum: ["ok", "error"] }).notNull(),
    /** the HTTP status answered (the REST status a tool's result carries for MCP) */
    status: integer("status").notNull(),
    /** JSON of bounded facts: exec's argv, env's key names, a file's path (never values or output) */
    detail: text("detail"),
  },
  (t) => [
    index("audit_events_team_at_idx").on(t.teamId, t.at, t.id),
    index("audit_events_team_actor_idx").on(t.teamId, t.actorId, t.at),
    index("audit_events_team_pod_idx").on(t.teamId, t.pod, t.at),
    index("audit_events_team_action_idx").on(t.teamId, t.action, t.at),
    index("audit_events_at_idx").on(t.at),
  ],
);

export type AuditEventRow = typeof auditEvents.$inferSelect;
