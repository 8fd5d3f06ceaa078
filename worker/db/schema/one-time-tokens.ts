import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./users";

/** Single-use tokens mailed to users (password reset, email verification), stored hashed. */
export const oneTimeTokens = sqliteTable(
  "one_time_tokens",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    purpose: text("purpose", { enum: ["reset_password", "verify_email"] }).notNull(),
    expiresAt: text("expires_at").notNull(),
    usedAt: text("used_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("one_time_tokens_user_idx").on(t.userId)],
);
