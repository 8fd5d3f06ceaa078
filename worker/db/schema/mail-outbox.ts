import { sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Where mail lands when no provider is configured; `npm run mail:outbox` prints it. */
export const mailOutbox = sqliteTable("mail_outbox", {
  id: text("id").primaryKey(),
  to: text("to").notNull(),
  subject: text("subject").notNull(),
  body: text("body").notNull(),
  createdAt: text("created_at").notNull(),
});
