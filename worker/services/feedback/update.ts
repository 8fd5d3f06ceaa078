import { eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { type FeedbackStatus, feedback } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamFeedback } from "./lookup";

/** `PATCH /api/pods/{name}/feedback/{id}`: any status to any status; 404 for another pod's comment. */
export async function setFeedbackStatus({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string; status: FeedbackStatus }>): Promise<Result<{ ok: true }>> {
  const found = await findTeamFeedback(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  await ctx.db.update(feedback).set({ status: input.status }).where(eq(feedback.id, found.value.comment.id));
  return ok({ ok: true as const });
}
