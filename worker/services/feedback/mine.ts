import { and, desc, eq, sql } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { feedback } from "../../db/schema";
import type { ServiceContext } from "../context";
import { MINE_LIMIT, SUBMITTER_ID } from "./caps";
import { findCollectingPod } from "./lookup";
import { type FeedbackView, toFeedbackView } from "./views";

/**
 * `GET /api/feedback/{token}/mine?submitter=` (public): that visitor's comments on the pod, newest
 * first, at most MINE_LIMIT; 404 like the POST for an unknown token or a disabled collection.
 */
export async function listMyFeedback({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { token: string; submitter: string };
}): Promise<Result<{ feedback: FeedbackView[] }>> {
  if (!SUBMITTER_ID.test(input.submitter))
    return fail("bad_request", "submitter: must be 1-64 letters, digits, '_' or '-'");
  const found = await findCollectingPod(ctx.db, input.token);
  if (!found.ok) return found;
  const rows = await ctx.db
    .select()
    .from(feedback)
    .where(and(eq(feedback.podId, found.value.podId), eq(feedback.submitterId, input.submitter)))
    .orderBy(desc(feedback.createdAt), desc(sql`rowid`))
    .limit(MINE_LIMIT);
  return ok({ feedback: rows.map((row) => toFeedbackView(row, found.value.podName)) });
}
