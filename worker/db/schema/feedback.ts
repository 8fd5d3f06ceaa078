import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const FEEDBACK_STATUSES = ["new", "read", "resolved"] as const;
export type FeedbackStatus = (typeof FEEDBACK_STATUSES)[number];

export const FEEDBACK_VISIBILITIES = ["everyone", "link"] as const;
export type FeedbackVisibility = (typeof FEEDBACK_VISIBILITIES)[number];

/**
 * A pod's visitor feedback settings (docs/feedback.md): one row per pod, made at the first read or
 * change. `token` is the secret of the public endpoints and of `share_url`; rotating it makes the
 * earlier one unknown everywhere (unique index: the public lookup goes through it).
 */
export const feedbackSettings = sqliteTable(
  "feedback_settings",
  {
    podId: text("pod_id").primaryKey(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    visibility: text("visibility", { enum: FEEDBACK_VISIBILITIES }).notNull(),
    token: text("token").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("feedback_settings_token_idx").on(t.token)],
);

export type FeedbackSettingsRow = typeof feedbackSettings.$inferSelect;

/**
 * Comments visitors pinned on a pod's pages (the spec's Feedback comment). Text a visitor did not
 * give is "", a number null. The rows go with their pod (worker/services/pods/remove.ts).
 */
export const feedback = sqliteTable(
  "feedback",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    submitterId: text("submitter_id").notNull(),
    name: text("name").notNull(),
    email: text("email").notNull(),
    comment: text("comment").notNull(),
    pagePath: text("page_path").notNull(),
    pinSelector: text("pin_selector").notNull(),
    pinX: real("pin_x"),
    pinY: real("pin_y"),
    viewportW: integer("viewport_w"),
    viewportH: integer("viewport_h"),
    elementText: text("element_text").notNull(),
    status: text("status", { enum: FEEDBACK_STATUSES }).notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("feedback_pod_status_idx").on(t.podId, t.status, t.createdAt),
    index("feedback_pod_submitter_idx").on(t.podId, t.submitterId, t.createdAt),
  ],
);

export type FeedbackRow = typeof feedback.$inferSelect;
