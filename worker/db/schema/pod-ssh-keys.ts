import { index, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Who put which key into which pod, through the control plane: at creation (the request's `ssh_key`
 * and the creator's auto_inject account keys) or with `POST /api/pods/{name}/ssh/keys`. The pod's
 * authorized_keys stays the truth for who may log in; this record is what lets the keys of a member
 * who leaves a team be taken out of its pods. Keys the pod's user writes into the file by hand over
 * SSH are not recorded (the control plane never sees them).
 *
 * `removal_requested_at` is set when the adder leaves the team; the row goes once the key is out of
 * the pod (the hourly cron retries pods whose host was unreachable then).
 */
export const podSshKeys = sqliteTable(
  "pod_ssh_keys",
  {
    id: text("id").primaryKey(),
    podId: text("pod_id").notNull(),
    /** OpenSSH `SHA256:…` of the key */
    fingerprint: text("fingerprint").notNull(),
    /** the normalized line `type base64 comment` that was installed */
    publicKey: text("public_key").notNull(),
    /** the account that put it there (no foreign key: the record outlives the account) */
    addedBy: text("added_by").notNull(),
    via: text("via", { enum: ["auto_inject", "api"] }).notNull(),
    createdAt: text("created_at").notNull(),
    removalRequestedAt: text("removal_requested_at"),
  },
  (t) => [
    uniqueIndex("pod_ssh_keys_pod_fingerprint_adder_idx").on(t.podId, t.fingerprint, t.addedBy),
    index("pod_ssh_keys_adder_idx").on(t.addedBy),
    index("pod_ssh_keys_removal_idx").on(t.removalRequestedAt),
  ],
);

export type PodSshKeyRow = typeof podSshKeys.$inferSelect;
