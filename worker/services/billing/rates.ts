import { sql } from "drizzle-orm";
import { dailyPrice, PLANS } from "../../../shared/catalog";

/**
 * A plan's daily rate as an SQL expression over `plan_slug` (cents, from shared/catalog.ts): the
 * accrual inserts a day's charges in one statement, with the rate computed where the row is read.
 * An unknown plan (a catalog change) charges the smallest plan's rate rather than nothing.
 */
export const dailyRateSql = (column = "plan_slug") => {
  const cases = PLANS.map((p) => sql`WHEN ${p.slug} THEN ${dailyPrice(p)}`);
  const fallback = dailyPrice(PLANS[0] as (typeof PLANS)[number]);
  return sql`CASE ${sql.raw(column)} ${sql.join(cases, sql` `)} ELSE ${fallback} END`;
};
