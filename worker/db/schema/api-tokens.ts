import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { teams } from "./teams";
import { users } from "./users";

export const apiTokens = sqliteTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** the team active when the token was made; the token keeps acting on it after a switch */
    teamId: text("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    prefix: text("prefix").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    lastUsedAt: text("last_used_at"),
    expiresAt: text("expires_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("api_tokens_user_idx").on(t.userId)],
);

export type ApiTokenRow = typeof apiTokens.$inferSelect;
