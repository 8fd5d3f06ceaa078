import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Every mail the service sends (docs/mail.md), one row each. With no provider configured a mail stays
 * here as `outbox` (`npm run mail:outbox` prints them); with one, it is `queued` until the mail-send
 * Workflow delivers it (`sent`, with the provider's id) or gives up (`failed`, with the reason).
 * `body` is the plain-text part, `html` the HTML part.
 */
export const MAIL_STATUSES = ["outbox", "queued", "sent", "failed"] as const;
export type MailStatus = (typeof MAIL_STATUSES)[number];

export const mailOutbox = sqliteTable(
  "mail_outbox",
  {
    id: text("id").primaryKey(),
    to: text("to").notNull(),
    subject: text("subject").notNull(),
    body: text("body").notNull(),
    html: text("html"),
    /** which template made it: verify_email, reset_password, invitation, alert … */
    kind: text("kind").notNull().default("other"),
    status: text("status", { enum: MAIL_STATUSES }).notNull().default("outbox"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    providerId: text("provider_id"),
    sentAt: text("sent_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("mail_outbox_status_created_idx").on(t.status, t.createdAt)],
);
