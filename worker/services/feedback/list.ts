import { and, count, desc, eq, sql } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { type FeedbackStatus, feedback } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { settingsOf } from "./lookup";
import { type FeedbackSettingsView, type FeedbackView, toFeedbackView, toSettingsView } from "./views";

export interface FeedbackList extends FeedbackSettingsView {
  feedback: FeedbackView[];
  counts: Record<FeedbackStatus, number>;
  total: number;
  limit: number;
  offset: number;
}

/**
 * `GET /api/pods/{name}/feedback`: the pod's comments newest first, `status` filtering them (and
 * `total`, the filtered count) while `counts` ignore it, and the pod's settings beside them. Paged
 * like every list (contract: `limit` default 20, max 100).
 */
export async function listFeedback({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; status?: FeedbackStatus; limit: number; offset: number }>): Promise<
  Result<FeedbackList>
> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const where = and(eq(feedback.podId, pod.id), input.status ? eq(feedback.status, input.status) : undefined);
  const [settings, rows, byStatus] = await Promise.all([
    settingsOf(ctx.db, pod.id),
    ctx.db
      .select()
      .from(feedback)
      .where(where)
      .orderBy(desc(feedback.createdAt), desc(sql`rowid`))
      .limit(input.limit)
      .offset(input.offset),
    ctx.db
      .select({ status: feedback.status, n: count() })
      .from(feedback)
      .where(eq(feedback.podId, pod.id))
      .groupBy(feedback.status),
  ]);
  const counts: Record<FeedbackStatus, number> = { new: 0, read: 0, resolved: 0 };
  for (const { status, n } of byStatus) counts[status] = n;
  const total = input.status ? counts[input.status] : counts.new + counts.read + counts.resolved;
  return ok({
    feedback: rows.map((row) => toFeedbackView(row, pod.name)),
    counts,
    ...toSettingsView(settings, pod.name, ctx.env.POD_DOMAIN),
    total,
    limit: input.limit,
    offset: input.offset,
  });
}
