import { sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Operator credentials for `/operator/*` (docs/operations.md): minted by the host scripts straight
 * into D1 (whoever may write the database is the operator), short-lived, only the SHA-256 stored.
 */
export const operatorTokens = sqliteTable("operator_tokens", {
  id: text("id").primaryKey(),
  tokenHash: text("token_hash").notNull().unique(),
  expiresAt: text("expires_at").notNull(),
  createdAt: text("created_at").notNull(),
});
