import { and, eq, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { pods } from "../../db/schema";
import { DAY } from "../../lib/time";

export const NAME_RESERVATION_MS = 7 * DAY;

/**
 * Whether `name` can be given to a new pod. Names are global (they are host names); a deleted pod's
 * name stays reserved for 7 days, after which its row is let go so the name can be reused.
 */
export async function claimableName(db: Db, name: string): Promise<Result<void>> {
  const [holder] = await nameHolder(db, name);
  return claimName(db, name, holder);
}

/** The pod row holding `name`, if any: claimName's input, for a caller that reads it in a batch. */
export const nameHolder = (db: Db, name: string) =>
  db
    .select({ id: pods.id, status: pods.status, deletedAt: pods.deletedAt })
    .from(pods)
    .where(eq(pods.name, name))
    .limit(1);

/** claimableName with the holder already read (nameHolder). */
export async function claimName(
  db: Db,
  name: string,
  existing: { id: string; status: string; deletedAt: string | null } | undefined,
): Promise<Result<void>> {
  if (!existing) return ok(undefined);
  if (existing.status !== "deleted") return fail("conflict", `pod name ${name} is already taken`);
  const until = Date.parse(existing.deletedAt ?? "") + NAME_RESERVATION_MS;
  if (Number.isNaN(until) || until > Date.now()) {
    return fail(
      "conflict",
      `pod name ${name} belonged to a deleted pod and is reserved until ${new Date(until).toISOString()}`,
    );
  }
  // The old row keeps its history (events, billing) under a name no one can ask for.
  await db
    .update(pods)
    .set({ name: sql`${pods.name} || '~' || ${pods.id}` })
    .where(and(eq(pods.id, existing.id), eq(pods.status, "deleted")));
  return ok(undefined);
}

/**
 * A pod name made from a human label (a file's or a repository's name): lowercase letters, digits
 * and hyphens, starting with a letter, "site" when the label gives too little, always with a random
 * six-character tail so two uploads of "site.zip" do not collide.
 */
export function podNameFrom(label: string): string {
  const base = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .slice(0, 33)
    .replace(/-+$/, "");
  const tail = [...crypto.getRandomValues(new Uint8Array(6))].map((b) => (b % 36).toString(36)).join("");
  return `${base.length >= 2 ? base : "site"}-${tail}`;
}
