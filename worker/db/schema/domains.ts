import { sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const DOMAIN_STATUSES = ["pending", "verified"] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/**
 * Custom domains of pods (docs/domains.md). A host name belongs to at most one pod across all teams
 * (the unique index); it is `pending` until its TXT record `_podhost-verify.<domain>` carries the
 * row's token, then `verified` and served by the pod's ingress vhost. The rows go with their pod
 * (worker/services/pods/remove.ts).
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
  },
  (t) => [uniqueIndex("domains_domain_idx").on(t.domain)],
);

export type DomainRow = typeof domains.$inferSelect;
