import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../../db/client";
import { backupRestores, backups } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { failBackup } from "./records";

/**
 * Past this, a backup or restore has outlived every bound of its workflow (the host's timeouts, the
 * waits for answers, the host's return window): whatever still holds it is broken (an agent killed,
 * a workflow lost).
 */
export const BACKUP_DEADLINE_MS = 6 * 60 * 60_000;
const PAGE = 100;
const MAX_PAGES = 10;

const LIVE = ["queued", "running", "waiting", "paused"];

async function endInstance(workflow: Workflow, id: string) {
  const instance = await workflow.get(id).catch(() => undefined);
  const status = await instance?.status().catch(() => undefined);
  if (instance && status && LIVE.includes(status.status)) await instance.terminate().catch(() => undefined);
}

/**
 * The cron's safety net behind "an interrupted backup never shows completed and leaves no orphan":
 * a backup still `in_progress` past the deadline ends `failed` and its object is deleted (its
 * workflow, if alive, is terminated first); a restore still running ends `failed`. Pages through
 * the few such rows; never the whole table.
 */
export async function sweepStuckBackups(env: Bindings, db: Db, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - BACKUP_DEADLINE_MS).toISOString();
  const hours = BACKUP_DEADLINE_MS / 3_600_000;
  let ended = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const stuck = await db
      .select({ id: backups.id })
      .from(backups)
      .where(and(eq(backups.status, "in_progress"), lt(backups.createdAt, cutoff)))
      .limit(PAGE);
    for (const { id } of stuck) {
      await endInstance(env.POD_BACKUP, id);
      await failBackup(env, db, id, `interrupted: it did not finish within ${hours} hours`);
      ended++;
    }
    if (stuck.length < PAGE) break;
  }
  for (let page = 0; page < MAX_PAGES; page++) {
    const stuck = await db
      .select({ id: backupRestores.id })
      .from(backupRestores)
      .where(and(eq(backupRestores.status, "running"), lt(backupRestores.createdAt, cutoff)))
      .limit(PAGE);
    for (const { id } of stuck) {
      await endInstance(env.POD_RESTORE, id);
      await db
        .update(backupRestores)
        .set({
          status: "failed",
          error: `interrupted: it did not finish within ${hours} hours`,
          finishedAt: nowIso(),
        })
        .where(and(eq(backupRestores.id, id), eq(backupRestores.status, "running")));
      ended++;
    }
    if (stuck.length < PAGE) break;
  }
  return ended;
}
