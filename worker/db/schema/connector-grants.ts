import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { teams } from "./teams";
import { users } from "./users";

/**
 * Connector grants: what a user approved on the OAuth consent page (docs/connectors.md). The OAuth
 * provider keeps its tokens in KV; this row is the grant's authority for the API. Every connector
 * request joins it, so deleting it revokes the grant at once (KV is only eventually consistent
 * across locations), and it is what `GET /api/connectors` lists.
 */
export const connectorGrants = sqliteTable(
  "connector_grants",
  {
    /** `cng_…`, carried in the grant's encrypted props */
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** the team active at consent: the connector acts on it, and only on it */
    teamId: text("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    /** the OAuth client (dynamic registration) and the name it registered, as shown at consent */
    clientId: text("client_id").notNull(),
    clientName: text("client_name").notNull(),
    /** the host of the redirect URI the tokens went to */
    redirectHost: text("redirect_host").notNull(),
    lastUsedAt: text("last_used_at"),
    expiresAt: text("expires_at").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("connector_grants_user_idx").on(t.userId, t.clientId)],
);

export type ConnectorGrantRow = typeof connectorGrants.$inferSelect;
