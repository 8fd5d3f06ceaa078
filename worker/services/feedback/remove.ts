import { eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { feedback } from "../../db/schema";
import type { TeamCall } from "../context";
import { findTeamFeedback } from "./lookup";

/** `DELETE /api/pods/{name}/feedback/{id}`: gone for good; 404 for another pod's comment. */
export async function deleteFeedback({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<{ ok: true }>> {
  const found = await findTeamFeedback(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  await ctx.db.delete(feedback).where(eq(feedback.id, found.value.comment.id));
  return ok({ ok: true as const });
}
