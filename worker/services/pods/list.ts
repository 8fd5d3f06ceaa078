import { and, count, desc, eq, ne } from "drizzle-orm";
import { hosts, pods } from "../../db/schema";
import type { TeamCall } from "../context";
import { toPodView } from "./view";

/** The team's pods, newest first, with the count per status over all of them (not just this page). */
export async function listPods({ ctx, teamId, input: page }: TeamCall<{ limit: number; offset: number }>) {
  const { db } = ctx;
  const live = and(eq(pods.teamId, teamId), ne(pods.status, "deleted"));
  const [rows, counts] = await Promise.all([
    db
      .select({ pod: pods, hostName: hosts.name })
      .from(pods)
      .leftJoin(hosts, eq(hosts.id, pods.hostId))
      .where(live)
      .orderBy(desc(pods.createdAt), desc(pods.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ status: pods.status, n: count() }).from(pods).where(live).groupBy(pods.status),
  ]);
  const statusCounts = Object.fromEntries(counts.map((c) => [c.status, c.n]));
  return {
    pods: rows.map((r) => toPodView(r.pod, r.hostName, ctx.env.POD_DOMAIN)),
    total: counts.reduce((sum, c) => sum + c.n, 0),
    limit: page.limit,
    offset: page.offset,
    status_counts: statusCounts,
  };
}
