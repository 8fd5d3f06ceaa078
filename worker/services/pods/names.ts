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
  const [existing] = await db
    .select({ id: pods.id, status: pods.status, deletedAt: pods.deletedAt })
    .from(pods)
    .where(eq(pods.name, name))
    .limit(1);
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
