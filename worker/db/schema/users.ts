import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    /** stored lowercased: emails compare case-insensitively */
    email: text("email").notNull().unique(),
    name: text("name").notNull(),
    /** `pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>` */
    passwordHash: text("password_hash").notNull(),
    emailVerifiedAt: text("email_verified_at"),
    activeTeamId: text("active_team_id").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  // Who has a team active: a departing member or a deleted team moves them back to their own
  // (resetActiveTeamStatement), which without it reads every account.
  (t) => [index("users_active_team_idx").on(t.activeTeamId)],
);

export type UserRow = typeof users.$inferSelect;
