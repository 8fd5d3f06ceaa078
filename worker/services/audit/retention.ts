import { sql } from "drizzle-orm";
import type { PlanSlug } from "../../../shared/catalog";
import type { Db } from "../../db/client";
import { DAY } from "../../lib/time";

/**
 * How long a team's audit log is kept (docs/audit.md): by the largest plan among the team's pods,
 * 30 days on Launch (and for a team with no pod) up to a year on Turbo.
 */
export const AUDIT_RETENTION_DAYS: Record<PlanSlug, number> = {
  launch: 30,
  build: 60,
  grow: 90,
  scale: 180,
  turbo: 365,
};
const SHORTEST = Math.min(...Object.values(AUDIT_RETENTION_DAYS));

const PAGE = 500;
const PAGES_PER_RUN = 10;

/**
 * The cron's bounded delete: rows past their team's retention, at most PAGES_PER_RUN × PAGE a run
 * (an hourly cron keeps up with 5,000 expiring changes an hour; a backlog drains over later runs).
 * Only rows older than the shortest retention are looked at (the `at` index), each compared with
 * its own team's. Returns how many rows went.
 */
export async function pruneAuditLog(db: Db, now = Date.now()): Promise<number> {
  const oldest = new Date(now - SHORTEST * DAY).toISOString();
  const nowSeconds = Math.floor(now / 1000);
  const days = sql.join(
    Object.entries(AUDIT_RETENTION_DAYS).map(([slug, d]) => sql`WHEN ${slug} THEN ${d}`),
    sql` `,
  );
  let deleted = 0;
  for (let page = 0; page < PAGES_PER_RUN; page++) {
    const result = await db.run(sql`
      DELETE FROM audit_events WHERE id IN (
        SELECT a.id FROM audit_events a
        WHERE a.at < ${oldest}
          AND a.at < strftime('%Y-%m-%dT%H:%M:%fZ', ${nowSeconds}, 'unixepoch', '-' || COALESCE(
            (SELECT MAX(CASE p.plan_slug ${days} ELSE ${SHORTEST} END) FROM pods p
              WHERE p.team_id = a.team_id AND p.status != 'deleted'),
            ${SHORTEST}) || ' days')
        LIMIT ${PAGE})`);
    const changes = result.meta.changes ?? 0;
    deleted += changes;
    if (changes < PAGE) break;
  }
  return deleted;
}
