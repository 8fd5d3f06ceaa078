import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { dayStartIso, nextDay } from "./periods";
import { dailyRateSql } from "./rates";

/**
 * The daily accrual: every pod that lived during a UTC day is charged that day at its plan's daily
 * rate. Stopped pods are charged; a pod deleted before the day began is not; a pod's plan is the
 * one it has when the day is charged, so a resize counts from the day it was made.
 *
 * Teams are taken a page at a time in team-id order, never the whole fleet at once. A page is one
 * INSERT … SELECT over the pods of a team-id range, and `pod_charges`' primary key (team, pod, day)
 * makes it idempotent: a re-run of the day or a retried page inserts nothing twice.
 */

export const ACCRUAL_PAGE_TEAMS = 200;

export interface AccrualPage {
  /** the last team of the page: where the next page starts; null when no team was left */
  lastTeamId: string | null;
  teams: number;
  charged: number;
  rowsRead: number;
}

export async function accrueTeamsPage(
  db: Db,
  day: string,
  afterTeamId: string,
  pageTeams = ACCRUAL_PAGE_TEAMS,
): Promise<AccrualPage> {
  const dayStart = dayStartIso(day);
  const dayEnd = dayStartIso(nextDay(day));
  const livedThatDay = sql`created_at < ${dayEnd} AND (deleted_at IS NULL OR deleted_at >= ${dayStart})`;
  const page = await db.run(
    sql`SELECT team_id FROM pods WHERE team_id > ${afterTeamId} AND ${livedThatDay}
        GROUP BY team_id ORDER BY team_id LIMIT ${pageTeams}`,
  );
  const teams = (page.results as { team_id: string }[]).map((r) => r.team_id);
  const last = teams.at(-1);
  if (last === undefined)
    return { lastTeamId: null, teams: 0, charged: 0, rowsRead: page.meta.rows_read ?? 0 };
  const inserted = await db.run(
    sql`INSERT INTO pod_charges (team_id, pod_id, day, pod_name, plan_slug, amount)
        SELECT team_id, id, ${day}, name, plan_slug, ${dailyRateSql()} FROM pods
        WHERE team_id > ${afterTeamId} AND team_id <= ${last} AND ${livedThatDay}
        ON CONFLICT DO NOTHING`,
  );
  return {
    lastTeamId: last,
    teams: teams.length,
    charged: inserted.meta.changes ?? 0,
    rowsRead: (page.meta.rows_read ?? 0) + (inserted.meta.rows_read ?? 0),
  };
}
