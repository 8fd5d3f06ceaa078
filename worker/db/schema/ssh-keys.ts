import { integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { users } from "./users";

/**
 * Account SSH keys: per user, not per team (a key is a person's credential). `public_key` is the
 * normalized one-line form `type base64 comment`; the fingerprint is OpenSSH's `SHA256:…`, unique per
 * user so the same key cannot be stored twice under two comments. Another user may hold the same key.
 */
export const sshKeys = sqliteTable(
  "ssh_keys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    publicKey: text("public_key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    /** installed into every pod the user creates afterwards; never into existing pods */
    autoInject: integer("auto_inject", { mode: "boolean" }).notNull().default(false),
    createdAt: text("created_at").notNull(),
  },
  // Also the index for "the user's keys": user_id is its first column.
  (t) => [uniqueIndex("ssh_keys_user_fingerprint_idx").on(t.userId, t.fingerprint)],
);

export type SshKeyRow = typeof sshKeys.$inferSelect;
