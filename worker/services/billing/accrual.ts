import { type SQL, sql } from "drizzle-orm";
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
 * makes it idempotent: a re-run of the day or a retried page inserts nothing twice. The range's end
 * is computed in SQL, and the page's INSERT and the read of where it ended go to D1 as one batch:
 * one round trip a page, which is what a day over a large fleet costs beyond the rows themselves.
 */

export const ACCRUAL_PAGE_TEAMS = 5000;

export interface AccrualPage {
  /** the last team of the page: where the next page starts; null when this page was the last */
  lastTeamId: string | null;
  teams: number;
  charged: number;
  rowsRead: number;
}

/**
 * The two statements of a page: the charges of the teams after `afterTeamId`, and where the page
 * ended. The page is the next `pageTeams` teams that have pod rows at all, whether or not a pod of
 * theirs lived that day: which teams those are is then read from the `(team_id, created_at, id)`
 * index alone, where "lived that day" needs `deleted_at` from every pod's row, and both statements
 * walk the page's teams. Read from the rows, the page's pods were looked up three times instead of
 * once (1.4–1.6× one INSERT … SELECT over the fleet at 100k pods, against ~1.1× from the index).
 */
export function accrualPageStatements(
  day: string,
  afterTeamId: string,
  pageTeams = ACCRUAL_PAGE_TEAMS,
): { charge: SQL; end: SQL } {
  const dayStart = dayStartIso(day);
  const dayEnd = dayStartIso(nextDay(day));
  const pageTeamIds = sql`SELECT team_id FROM pods WHERE team_id > ${afterTeamId}
    GROUP BY team_id ORDER BY team_id LIMIT ${pageTeams}`;
  return {
    charge: sql`INSERT INTO pod_charges (team_id, pod_id, day, pod_name, plan_slug, amount)
      SELECT team_id, id, ${day}, name, plan_slug, ${dailyRateSql()} FROM pods
      WHERE team_id > ${afterTeamId} AND team_id <= (SELECT MAX(team_id) FROM (${pageTeamIds}))
        AND created_at < ${dayEnd} AND (deleted_at IS NULL OR deleted_at >= ${dayStart})
      ON CONFLICT DO NOTHING`,
    end: sql`SELECT MAX(team_id) AS last, COUNT(*) AS teams FROM (${pageTeamIds})`,
  };
}

export async function accrueTeamsPage(
  db: Db,
  day: string,
  afterTeamId: string,
  pageTeams = ACCRUAL_PAGE_TEAMS,
): Promise<AccrualPage> {
  const { charge, end } = accrualPageStatements(day, afterTeamId, pageTeams);
  // drizzle's batch takes no raw statements: the two are prepared on D1 itself
  const prepared = (query: SQL) => {
    const { sql: text, params } = db.run(query).getQuery();
    return db.$client.prepare(text).bind(...params);
  };
  const [inserted, page] = await db.$client.batch([prepared(charge), prepared(end)]);
  if (!inserted || !page) throw new Error("D1 answered a batch of two with fewer results");
  const [ended] = page.results as { last: string | null; teams: number }[];
  const teams = ended?.teams ?? 0;
  return {
    // a page short of full was the last: no round trip for an empty page after it
    lastTeamId: teams < pageTeams ? null : (ended?.last ?? null),
    teams,
    charged: inserted.meta.changes ?? 0,
    rowsRead: (inserted.meta.rows_read ?? 0) + (page.meta.rows_read ?? 0),
  };
}
