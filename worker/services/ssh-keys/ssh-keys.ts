import { and, asc, desc, eq, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type SshKeyRow, sshKeys } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { defaultKeyName, parsePublicKey } from "./public-key";

/**
 * Account SSH keys: a user's keys, whichever team is active. They reach pods only through
 * `auto_inject` at pod creation; adding, editing or deleting one never touches an existing pod.
 */

export interface SshKeyView {
  id: string;
  user_id: string;
  name: string;
  public_key: string;
  fingerprint: string;
  auto_inject: boolean;
  created_at: string;
}

export const toSshKeyView = (k: SshKeyRow): SshKeyView => ({
  id: k.id,
  user_id: k.userId,
  name: k.name,
  public_key: k.publicKey,
  fingerprint: k.fingerprint,
  auto_inject: k.autoInject,
  created_at: k.createdAt,
});

/** Insertion order, for keys created in the same millisecond. */
const rowid = sql`rowid`;

const notFound = () => fail("not_found", "SSH key not found");
const mine = (userId: string, id: string) => and(eq(sshKeys.id, id), eq(sshKeys.userId, userId));

/** Newest first, like API tokens. */
export async function listSshKeys(ctx: ServiceContext, userId: string): Promise<SshKeyView[]> {
  const rows = await ctx.db
    .select()
    .from(sshKeys)
    .where(eq(sshKeys.userId, userId))
    .orderBy(desc(sshKeys.createdAt), desc(rowid));
  return rows.map(toSshKeyView);
}

export async function addSshKey(
  ctx: ServiceContext,
  userId: string,
  input: { public_key: string; name?: string; auto_inject: boolean },
): Promise<Result<SshKeyView>> {
  const parsed = await parsePublicKey(input.public_key, "public_key");
  if (!parsed.ok) return parsed;
  const key = parsed.value;
  const row: SshKeyRow = {
    id: newId("key"),
    userId,
    name: input.name ?? defaultKeyName(key),
    publicKey: key.normalized,
    fingerprint: key.fingerprint,
    autoInject: input.auto_inject,
    createdAt: nowIso(),
  };
  // The unique (user_id, fingerprint) index decides, so two concurrent adds cannot both store the key.
  const inserted = await ctx.db
    .insert(sshKeys)
    .values(row)
    .onConflictDoNothing({ target: [sshKeys.userId, sshKeys.fingerprint] })
    .returning({ id: sshKeys.id });
  if (inserted.length === 0) {
    const [existing] = await ctx.db
      .select({ name: sshKeys.name })
      .from(sshKeys)
      .where(and(eq(sshKeys.userId, userId), eq(sshKeys.fingerprint, key.fingerprint)))
      .limit(1);
    return fail(
      "conflict",
      `this key (${key.fingerprint}) is already on your account${existing ? ` as "${existing.name}"` : ""}`,
    );
  }
  return ok(toSshKeyView(row));
}

export async function updateSshKey(
  ctx: ServiceContext,
  userId: string,
  id: string,
  input: { name?: string; auto_inject?: boolean },
): Promise<Result<SshKeyView>> {
  const changes = {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.auto_inject !== undefined ? { autoInject: input.auto_inject } : {}),
  };
  const [row] =
    Object.keys(changes).length > 0
      ? await ctx.db.update(sshKeys).set(changes).where(mine(userId, id)).returning()
      : await ctx.db.select().from(sshKeys).where(mine(userId, id)).limit(1);
  return row ? ok(toSshKeyView(row)) : notFound();
}

export async function deleteSshKey(ctx: ServiceContext, userId: string, id: string): Promise<Result<void>> {
  const deleted = await ctx.db.delete(sshKeys).where(mine(userId, id)).returning({ id: sshKeys.id });
  return deleted.length > 0 ? ok(undefined) : notFound();
}

/** A key going into a new pod, and how (recorded in `pod_ssh_keys`). */
export interface NewPodKey {
  fingerprint: string;
  line: string;
  via: "auto_inject" | "api";
}

/**
 * The authorized_keys of a new pod: the key sent with the request (validated like an account key)
 * and the user's `auto_inject` keys, oldest first, each key once.
 */
export async function newPodAuthorizedKeys(
  db: Db,
  userId: string,
  requestKey: string | undefined,
): Promise<Result<NewPodKey[]>> {
  const keys: NewPodKey[] = [];
  if (requestKey !== undefined) {
    const parsed = await parsePublicKey(requestKey, "ssh_key");
    if (!parsed.ok) return parsed;
    keys.push({ fingerprint: parsed.value.fingerprint, line: parsed.value.normalized, via: "api" });
  }
  const auto = await db
    .select({ fingerprint: sshKeys.fingerprint, line: sshKeys.publicKey })
    .from(sshKeys)
    .where(and(eq(sshKeys.userId, userId), eq(sshKeys.autoInject, true)))
    .orderBy(asc(sshKeys.createdAt), asc(rowid));
  for (const key of auto) {
    if (!keys.some((k) => k.fingerprint === key.fingerprint)) keys.push({ ...key, via: "auto_inject" });
  }
  return ok(keys);
}
