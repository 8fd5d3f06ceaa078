import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { backupRestores, backupSchedules, backups } from "../../db/schema";
import type { Bindings } from "../../env";
import { removeBackups } from "./records";

/**
 * A deleted pod's backups go with it: every object and row, its schedule and restore history. (The
 * archives are the tenant's data; keeping them past the pod would keep data nobody can reach.) A
 * backup workflow still running finds its row gone and ends; an upload that lands later is deleted
 * by the byte route.
 */
export async function deletePodBackups(env: Bindings, db: Db, podId: string): Promise<number> {
  const rows = await db
    .select({ id: backups.id, objectKey: backups.objectKey })
    .from(backups)
    .where(eq(backups.podId, podId));
  await removeBackups(env, db, rows);
  await db.batch([
    db.delete(backupSchedules).where(eq(backupSchedules.podId, podId)),
    db.delete(backupRestores).where(eq(backupRestores.podId, podId)),
  ]);
  return rows.length;
}
