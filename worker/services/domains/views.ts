import type { DomainRow, DomainStatus } from "../../db/schema";
import { verificationName } from "./names";

/** The spec's Domain resource (docs/domains.md). */
export interface DomainView {
  id: string;
  pod_name: string;
  domain: string;
  status: DomainStatus;
  verification: { type: "TXT"; name: string; value: string };
  created_at: string;
  verified_at: string | null;
  /** podhost's extension (docs/domains.md, "TLS"): null until verified, then `not_configured`, `pending`, `active` or `failed: <why>` */
  tls_status: string | null;
}

export const toDomainView = (row: DomainRow, podName: string): DomainView => ({
  id: row.id,
  pod_name: podName,
  domain: row.domain,
  status: row.status,
  verification: { type: "TXT", name: verificationName(row.domain), value: row.verificationToken },
  created_at: row.createdAt,
  verified_at: row.verifiedAt,
  tls_status: row.status === "verified" ? row.tlsStatus : null,
});
