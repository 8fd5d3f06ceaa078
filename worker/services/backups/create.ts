import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type BackupRow, type BackupTrigger, backups, type PodRow } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { isUniqueViolation } from "../teams/slug";
import {
  BUSY,
  backupable,
  busyWith,
  countedBackups,
  failBackup,
  notBackupable,
  objectKeyOf,
  planLimit,
} from "./records";
import { type BackupView, toBackupView } from "./views";

/**
 * A new backup row `in_progress`, the pod's lock: the unique index lets one backup (or import) per
 * pod be in progress, so two starts at once cannot both run. `conflict` when one already is.
 */
export async function insertBackup(
  db: Db,
  pod: Pick<PodRow, "id" | "name">,
  values: { trigger: BackupTrigger; note: string | null },
): Promise<Result<BackupRow>> {
  const id = newId("bk");
  try {
    const [row] = await db
      .insert(backups)
      .values({
        id,
        podId: pod.id,
        note: values.note,
        status: "in_progress",
        trigger: values.trigger,
        objectKey: objectKeyOf(pod.id, id),
        createdAt: nowIso(),
      })
      .returning();
    return row ? ok(row) : fail("internal", "the backup was not recorded");
  } catch (error) {
    if (isUniqueViolation(error, "backups.pod_id")) return fail("conflict", BUSY(pod.name));
    throw error;
  }
}

/** The backup's workflow (worker/workflows/pod-backup.ts), instance id = the backup's id. */
export async function startBackupWorkflow(
  env: Bindings,
  db: Db,
  backup: BackupRow,
): Promise<Result<BackupRow>> {
  try {
    await env.POD_BACKUP.create({ id: backup.id, params: { backupId: backup.id, podId: backup.podId } });
    return ok(backup);
  } catch (error) {
    const reason = `the backup could not be started: ${error instanceof Error ? error.message : String(error)}`;
    await failBackup(env, db, backup.id, reason);
    return fail("unavailable", reason);
  }
}

/** A backup made on the pod's host: the row, then its workflow. */
export async function startBackup(
  env: Bindings,
  db: Db,
  pod: PodRow,
  values: { trigger: "manual" | "scheduled"; note: string | null },
): Promise<Result<BackupRow>> {
  const row = await insertBackup(db, pod, values);
  return row.ok ? startBackupWorkflow(env, db, row.value) : row;
}

/**
 * `POST /api/pods/{name}/backups`: 202 with the record `in_progress`. A running pod is read live; a
 * stopped one in helper containers on its host, left stopped (docs/backups.md "A stopped pod").
 * 400 for a pod in any other state, 403 at the plan's limit, 409 while another backup, import or
 * restore of the pod runs.
 */
export async function createBackup({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; note?: string }>): Promise<Result<BackupView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  if (!backupable(pod)) return fail("bad_request", notBackupable(pod));
  const limit = planLimit(pod);
  if ((await countedBackups(ctx.db, pod.id)) >= limit)
    return fail(
      "forbidden",
      `pod ${pod.name} has ${limit} backup(s), the limit of the ${pod.planSlug} plan; delete one first`,
    );
  if (await busyWith(ctx.db, pod.id)) return fail("conflict", BUSY(pod.name));
  const started = await startBackup(ctx.env, ctx.db, pod, { trigger: "manual", note: input.note ?? null });
  if (!started.ok) return started;
  const [row] = await ctx.db.select().from(backups).where(eq(backups.id, started.value.id));
  return ok(toBackupView(row ?? started.value, pod.name));
}
