import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const DOMAIN_STATUSES = ["pending", "verified"] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/**
 * Custom domains of pods (docs/domains.md). A `pending` row is a claim: any number of pods, of any
 * teams, may claim one host name (once per pod), and none of them blocks the others. The first whose
 * TXT record `_podhost-verify.<domain>` carries its row's token makes its row `verified` — at most
 * one row per name is (the partial unique index decides between two verifications at once) — and
 * the other claims are dropped. A verified name is re-checked by the cron (`checked_at`; since when
 * its record has been missing, `missing_since`) and released back to `pending` once the record has
 * been gone for the stated time. The rows go with their pod (worker/services/pods/remove.ts).
 */
export const domains = sqliteTable(
  "domains",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    domain: text("domain").notNull(),
    status: text("status", { enum: DOMAIN_STATUSES }).notNull(),
    /** the value the TXT record must carry */
    verificationToken: text("verification_token").notNull(),
    createdAt: text("created_at").notNull(),
    verifiedAt: text("verified_at"),
    /** a verified domain: when the cron last looked its TXT record up (null: not since verified) */
    checkedAt: text("checked_at"),
    /** a verified domain: since when the re-check has not found its TXT record (null: found) */
    missingSince: text("missing_since"),
    /**
     * a verified domain's certificate at the edge (docs/domains.md, "TLS"): null until verified,
     * `not_configured` without Cloudflare settings, `pending`, `active`, or `failed: <why>`
     */
    tlsStatus: text("tls_status"),
    /** the Cloudflare for SaaS custom hostname's id registered for it (null: none registered) */
    tlsHostnameId: text("tls_hostname_id"),
    /** when the custom hostname was last looked at (the cron polls the oldest first) */
    tlsCheckedAt: text("tls_checked_at"),
  },
  (t) => [
    uniqueIndex("domains_verified_domain_idx").on(t.domain).where(sql`status = 'verified'`),
    uniqueIndex("domains_pod_domain_idx").on(t.podId, t.domain),
    index("domains_name_idx").on(t.domain),
    index("domains_recheck_idx").on(t.checkedAt).where(sql`status = 'verified'`),
    index("domains_tls_poll_idx").on(t.tlsCheckedAt).where(sql`status = 'verified'`),
  ],
);

export type DomainRow = typeof domains.$inferSelect;

/**
 * Custom hostnames still to be deleted at Cloudflare (docs/domains.md, "TLS"): a domain or pod that
 * is gone while Cloudflare's API failed leaves its hostname's id here, and the cron deletes it there
 * (a 404 counts as deleted) before the row goes, so no registered hostname is ever forgotten.
 */
export const customHostnameRemovals = sqliteTable(
  "custom_hostname_removals",
  {
    /** Cloudflare's custom hostname id */
    id: text("id").primaryKey(),
    hostname: text("hostname").notNull(),
    podId: text("pod_id").notNull(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error").notNull(),
    createdAt: text("created_at").notNull(),
    attemptedAt: text("attempted_at").notNull(),
  },
  (t) => [index("custom_hostname_removals_attempted_idx").on(t.attemptedAt)],
);

export type CustomHostnameRemovalRow = typeof customHostnameRemovals.$inferSelect;
