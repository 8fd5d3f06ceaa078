import { and, count, desc, eq, ne, type SQL, sql } from "drizzle-orm";
import { hosts, pods } from "../../db/schema";
import type { ServiceContext, TeamCall } from "../context";
import { toPodView } from "./view";

type PageQuery = { limit: number; offset: number };

/**
 * The statements of one page of the team's pods (newest first) and the count per status over all
 * of them, to run together in one `db.batch`: `listPods` on their own, the dashboard's pods list
 * with what it shows beside them (`podsPageIds` names the same page's pods inside that batch).
 */
export function listPodsStatements(ctx: ServiceContext, teamId: string, page: PageQuery) {
  const { db } = ctx;
  const live = and(eq(pods.teamId, teamId), ne(pods.status, "deleted"));
  return {
    rows: db
      // aliased: in a D1 batch the rows come back keyed by column name, where hosts.name would
      // overwrite pods.name
      .select({ pod: pods, hostName: sql<string | null>`${hosts.name}`.as("host_name") })
      .from(pods)
      .leftJoin(hosts, eq(hosts.id, pods.hostId))
      .where(live)
      .orderBy(desc(pods.createdAt), desc(pods.id))
      .limit(page.limit)
      .offset(page.offset),
    counts: db.select({ status: pods.status, n: count() }).from(pods).where(live).groupBy(pods.status),
  };
}

/** The ids of the page `listPodsStatements` reads, as a subquery of one column `value`. */
export const podsPageIds = (teamId: string, page: PageQuery): SQL =>
  sql`SELECT id AS value FROM pods WHERE team_id = ${teamId} AND status != 'deleted' ORDER BY created_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`;

type Statements = ReturnType<typeof listPodsStatements>;

/** The page as `GET /api/pods` answers it, from the statements' results. */
export function podsPage(
  ctx: ServiceContext,
  page: PageQuery,
  rows: Awaited<Statements["rows"]>,
  counts: Awaited<Statements["counts"]>,
) {
  return {
    pods: rows.map((r) => toPodView(r.pod, r.hostName, ctx.env.POD_DOMAIN)),
    total: counts.reduce((sum, c) => sum + c.n, 0),
    limit: page.limit,
    offset: page.offset,
    status_counts: Object.fromEntries(counts.map((c) => [c.status, c.n])),
  };
}

/**
 * The team's pods, newest first, with the count per status over all of them (not just this page):
 * one round trip for both, since a client waiting for a pod to run polls this.
 */
export async function listPods({ ctx, teamId, input: page }: TeamCall<PageQuery>) {
  const q = listPodsStatements(ctx, teamId, page);
  const [rows, counts] = await ctx.db.batch([q.rows, q.counts]);
  return podsPage(ctx, page, rows, counts);
}
