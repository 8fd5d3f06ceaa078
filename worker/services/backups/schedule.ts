import { and, asc, eq, inArray, isNull, lte, or, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import {
  type BackupFrequency,
  type BackupScheduleRow,
  backupSchedules,
  type PodRow,
  pods,
} from "../../db/schema";
import type { Bindings } from "../../env";
import { DAY, HOUR, nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { startBackup } from "./create";
import { planLimit } from "./records";

/**
 * A pod's backup schedule (docs/backups.md): enabled, daily or weekly, how many backups to keep. No
 * row is the default: enabled, daily, the plan's limit; the first run is a day after the pod was
 * created. The cron (`runDueSchedules`) takes due pods a page at a time.
 */

export const INTERVAL_MS: Record<BackupFrequency, number> = { daily: DAY, weekly: 7 * DAY };

export interface ScheduleView {
  enabled: boolean;
  frequency: BackupFrequency;
  retention: number;
  /** when the next scheduled backup is due (a stopped pod's is skipped and moves on) */
  next_run_at: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();
const firstRun = (pod: Pick<PodRow, "createdAt">, frequency: BackupFrequency) =>
  iso(Date.parse(pod.createdAt) + INTERVAL_MS[frequency]);

function toScheduleView(pod: PodRow, row: BackupScheduleRow | undefined): ScheduleView {
  const limit = planLimit(pod);
  if (!row)
    return { enabled: true, frequency: "daily", retention: limit, next_run_at: firstRun(pod, "daily") };
  return {
    enabled: row.enabled,
    frequency: row.frequency,
    // a plan changed down since: the schedule keeps no more than the plan allows
    retention: Math.min(row.retention ?? limit, limit),
    next_run_at: row.enabled ? row.nextRunAt : null,
  };
}

const scheduleOf = async (db: Db, podId: string) =>
  (await db.select().from(backupSchedules).where(eq(backupSchedules.podId, podId)))[0];

/** `GET /api/pods/{name}/backups/schedule` */
export async function getSchedule({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string }>): Promise<Result<ScheduleView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  return ok(toScheduleView(found.value.pod, await scheduleOf(ctx.db, found.value.pod.id)));
}

export interface SchedulePatch {
  enabled?: boolean;
  frequency?: BackupFrequency;
  retention?: number;
}

/** `PUT /api/pods/{name}/backups/schedule`: any of the three; retention 1 up to the plan's limit, else 400. */
export async function updateSchedule({
  ctx,
  teamId,
  input,
}: TeamCall<SchedulePatch & { name: string }>): Promise<Result<ScheduleView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const limit = planLimit(pod);
  if (input.retention !== undefined && input.retention > limit)
    return fail("bad_request", `retention: at most ${limit}, the backups the ${pod.planSlug} plan keeps`);
  const current = await scheduleOf(ctx.db, pod.id);
  const frequency = input.frequency ?? current?.frequency ?? "daily";
  // A new frequency counts from the last run (or the pod's creation); otherwise the next run stays.
  const nextRunAt =
    current && input.frequency === undefined
      ? current.nextRunAt
      : current?.lastRunAt
        ? iso(Date.parse(current.lastRunAt) + INTERVAL_MS[frequency])
        : firstRun(pod, frequency);
  const now = nowIso();
  const values = {
    enabled: input.enabled ?? current?.enabled ?? true,
    frequency,
    retention: input.retention ?? current?.retention ?? null,
    nextRunAt,
    updatedAt: now,
  };
  const [row] = await ctx.db
    .insert(backupSchedules)
    .values({ podId: pod.id, ...values, createdAt: now })
    .onConflictDoUpdate({ target: backupSchedules.podId, set: values })
    .returning();
  return ok(toScheduleView(pod, row));
}

/** the pods the cron takes at once, and the pages per run (the hourly cron catches up on the rest) */
export const SCHEDULE_PAGE = 50;
const MAX_PAGES = 20;
/** a pod whose backup could not start now (another running) is looked at again after this */
const RETRY_MS = HOUR;

/**
 * The cron's backups: due pods (no schedule row and created over a day ago, or enabled and past
 * `next_run_at`), a page at a time in order of due time, never the fleet at once. A running pod
 * gets a scheduled backup (its workflow verifies it and then keeps the schedule's retention); a
 * stopped pod is skipped, its backups neither added nor deleted. Either way its next run moves on.
 * Returns how many pods were taken.
 */
export async function runDueSchedules(
  env: Bindings,
  db: Db,
  now = Date.now(),
  opts: { pageSize?: number } = {},
): Promise<{ started: number; skipped: number }> {
  const pageSize = opts.pageSize ?? SCHEDULE_PAGE;
  const nowAt = iso(now);
  const unscheduledDue = iso(now - INTERVAL_MS.daily);
  const taken = { started: 0, skipped: 0 };
  for (let page = 0; page < MAX_PAGES; page++) {
    const due = await db
      .select({ pod: pods, schedule: backupSchedules })
      .from(pods)
      .leftJoin(backupSchedules, eq(backupSchedules.podId, pods.id))
      .where(
        and(
          inArray(pods.status, ["running", "stopped"]),
          or(
            and(isNull(backupSchedules.podId), lte(pods.createdAt, unscheduledDue)),
            and(eq(backupSchedules.enabled, true), lte(backupSchedules.nextRunAt, nowAt)),
          ),
        ),
      )
      .orderBy(asc(sql`coalesce(${backupSchedules.nextRunAt}, ${pods.createdAt})`), asc(pods.id))
      .limit(pageSize);
    for (const { pod, schedule } of due) {
      const frequency = schedule?.frequency ?? "daily";
      let next = now + INTERVAL_MS[frequency];
      let ran = false;
      if (pod.status === "running" && pod.hostId) {
        const started = await startBackup(env, db, pod, { trigger: "scheduled", note: null }).catch(
          (error: unknown) => fail("internal", String(error)),
        );
        if (started.ok) {
          ran = true;
          taken.started++;
        } else {
          next = now + RETRY_MS;
          console.warn(
            JSON.stringify({ msg: "scheduled backup not started", podId: pod.id, error: started.message }),
          );
        }
      } else {
        taken.skipped++;
      }
      const values = {
        nextRunAt: iso(next),
        updatedAt: nowAt,
        ...(ran ? { lastRunAt: nowAt } : {}),
      };
      await db
        .insert(backupSchedules)
        .values({ podId: pod.id, enabled: true, frequency, retention: null, createdAt: nowAt, ...values })
        .onConflictDoUpdate({ target: backupSchedules.podId, set: values });
    }
    if (due.length < pageSize) break;
  }
  return taken;
}
