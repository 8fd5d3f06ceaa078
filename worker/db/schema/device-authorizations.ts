import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Device logins (OAuth 2.0 device authorization grant, RFC 8628; docs/connectors.md#device-login):
 * a code shown on a machine without a browser (`podhost login --device`) that a signed-in user
 * confirms in any browser. The row lives ten minutes; its device code is kept only as a hash.
 * Approval makes the provider's authorization code for the grant (PKCE bound to `codeVerifier`, a
 * secret that never leaves the Worker) and keeps it here until the device's next poll exchanges it.
 */
export const deviceAuthorizations = sqliteTable(
  "device_authorizations",
  {
    /** `dva_…` */
    id: text("id").primaryKey(),
    /** SHA-256 hex of the device code the polling client holds */
    deviceCodeHash: text("device_code_hash").notNull(),
    /** the code the user types, normalized (8 letters, no dash) */
    userCode: text("user_code").notNull(),
    clientId: text("client_id").notNull(),
    /** the PKCE verifier of the authorization code made at approval */
    codeVerifier: text("code_verifier").notNull(),
    /** pending → approved → used, or denied */
    status: text("status", { enum: ["pending", "approved", "denied", "used"] }).notNull(),
    /** the provider's authorization code, between approval and the exchange only */
    authCode: text("auth_code"),
    /** the registered redirect URI the code was made for (the exchange must name it) */
    redirectUri: text("redirect_uri"),
    /** the grant made at approval: `cng_…`, the user and the team it acts on */
    connectorId: text("connector_id"),
    userId: text("user_id"),
    teamId: text("team_id"),
    /** seconds a client must wait between polls (slow_down otherwise) */
    intervalS: integer("interval_s").notNull(),
    lastPolledAt: text("last_polled_at"),
    expiresAt: text("expires_at").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("device_authorizations_device_code_idx").on(t.deviceCodeHash),
    uniqueIndex("device_authorizations_user_code_idx").on(t.userCode),
    index("device_authorizations_expires_idx").on(t.expiresAt),
  ],
);

export type DeviceAuthorizationRow = typeof deviceAuthorizations.$inferSelect;
