import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Alerts (docs/alerts.md): a team's channels, the incidents its events open and close, and every
 * delivery of one to a channel with its outcome.
 */
export const ALERT_CHANNEL_KINDS = ["email", "webhook", "chat"] as const;
export type AlertChannelKind = (typeof ALERT_CHANNEL_KINDS)[number];

/** Every event that alerts (docs/alerts.md); the API's enum and the dashboard read this list. */
export const ALERT_EVENTS = [
  "deploy_failed",
  "backup_failed",
  "service_failed",
  "pod_error",
  "app_unhealthy",
  "disk_full",
  "payment_failed",
  "team_suspended",
  "host_lost",
] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];

export const alertChannels = sqliteTable(
  "alert_channels",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    kind: text("kind", { enum: ALERT_CHANNEL_KINDS }).notNull(),
    name: text("name").notNull(),
    /** webhook and chat: where deliveries are POSTed */
    url: text("url"),
    /** email: the roles whose members get the mail, JSON array (["owner"], ["owner","member"]) */
    roles: text("roles"),
    /** webhook: the signing secret, sealed (worker/lib/secret-box.ts, owner = the channel's id) */
    secretSealed: text("secret_sealed"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("alert_channels_team_idx").on(t.teamId)],
);

/**
 * One incident per (team, event, pod) at a time: the partial unique index on `key` among open ones
 * is what makes an event fire once per incident, however many times it recurs until it clears.
 */
export const alertIncidents = sqliteTable(
  "alert_incidents",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    podId: text("pod_id"),
    event: text("event").notNull(),
    /** `<event>:<pod id>`: what makes two events the same incident */
    key: text("key").notNull(),
    summary: text("summary").notNull(),
    openedAt: text("opened_at").notNull(),
    resolvedAt: text("resolved_at"),
  },
  (t) => [
    uniqueIndex("alert_incidents_open_key_idx").on(t.key).where(sql`resolved_at IS NULL`),
    index("alert_incidents_team_idx").on(t.teamId, t.openedAt),
  ],
);

export const ALERT_DELIVERY_STATES = ["firing", "resolved", "test"] as const;
export const ALERT_DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;

export const alertDeliveries = sqliteTable(
  "alert_deliveries",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id").notNull(),
    channelId: text("channel_id").notNull(),
    incidentId: text("incident_id"),
    event: text("event").notNull(),
    state: text("state", { enum: ALERT_DELIVERY_STATES }).notNull(),
    /** the JSON body every attempt sends (the signature is made anew per attempt, with its time) */
    payload: text("payload").notNull(),
    status: text("status", { enum: ALERT_DELIVERY_STATUSES }).notNull().default("pending"),
    /** the receiver's last HTTP status (webhook, chat) */
    statusCode: integer("status_code"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: text("created_at").notNull(),
    deliveredAt: text("delivered_at"),
  },
  (t) => [
    index("alert_deliveries_team_created_idx").on(t.teamId, t.createdAt),
    index("alert_deliveries_channel_idx").on(t.channelId),
  ],
);

/**
 * Which events alert (docs/alerts.md): every event is on unless a rule turns it off. A rule with
 * `scope` '' is the team's; one with a pod's id overrides it for that pod.
 */
export const alertRules = sqliteTable(
  "alert_rules",
  {
    teamId: text("team_id").notNull(),
    /** '' for the whole team, or a pod's id */
    scope: text("scope").notNull(),
    event: text("event").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.scope, t.event] })],
);
