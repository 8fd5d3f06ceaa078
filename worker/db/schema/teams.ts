import { index, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { users } from "./users";

export const teams = sqliteTable(
  "teams",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    slug: text("slug").notNull().unique(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id),
    /** `personal` teams are made at registration and cannot be deleted: a user always has one team. */
    accountType: text("account_type", { enum: ["personal", "team"] }).notNull(),
    trustTier: text("trust_tier").notNull().default("standard"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  // A user's personal team, looked up by owner on every credential-cache miss (services/auth/credentials.ts).
  (t) => [index("teams_owner_idx").on(t.ownerId, t.accountType)],
);

export const teamMembers = sqliteTable(
  "team_members",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text("role", { enum: ["owner", "member"] }).notNull(),
    joinedAt: text("joined_at").notNull(),
  },
  (t) => [
    uniqueIndex("team_members_team_user_idx").on(t.teamId, t.userId),
    index("team_members_user_idx").on(t.userId),
  ],
);

export const invitations = sqliteTable(
  "invitations",
  {
    id: text("id").primaryKey(),
    teamId: text("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    role: text("role", { enum: ["owner", "member"] }).notNull(),
    /**
     * SHA-256 of the invitation token, what a link is looked up by: a leaked table or backup admits
     * nobody to a team.
     */
    tokenHash: text("token_hash").notNull().unique(),
    /**
     * The token sealed with the INVITATION_TOKEN_KEY secret (worker/lib/secret-box.ts, bound to this
     * row), for the owner's list (the spec's Invitation has `token`); null for invitations made
     * before it was kept or without the key: the list shows them without a token.
     */
    tokenSealed: text("token_sealed"),
    invitedBy: text("invited_by")
      .notNull()
      .references(() => users.id),
    expiresAt: text("expires_at").notNull(),
    createdAt: text("created_at").notNull(),
    /** set once, by a conditional UPDATE: an invitation admits one account */
    acceptedBy: text("accepted_by").references(() => users.id, { onDelete: "set null" }),
    acceptedAt: text("accepted_at"),
  },
  (t) => [index("invitations_team_idx").on(t.teamId)],
);

export type TeamRow = typeof teams.$inferSelect;
export type TeamMemberRow = typeof teamMembers.$inferSelect;
export type InvitationRow = typeof invitations.$inferSelect;
