import { and, eq, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { randomToken } from "../../../shared/ids";
import type { Db } from "../../db/client";
import {
  type FeedbackRow,
  type FeedbackSettingsRow,
  feedback,
  feedbackSettings,
  pods,
} from "../../db/schema";
import { nowIso } from "../../lib/time";
import { findTeamPod, type PodWithHost } from "../pods/lookup";

export const newFeedbackToken = () => randomToken(32);

/**
 * The pod's settings row, made (disabled, `everyone`, a fresh token) at the first read: every
 * answer carries a token and a share_url. Two first reads at once make one row (the primary key).
 */
export async function settingsOf(db: Db, podId: string): Promise<FeedbackSettingsRow> {
  const [row] = await db.select().from(feedbackSettings).where(eq(feedbackSettings.podId, podId)).limit(1);
  if (row) return row;
  await db
    .insert(feedbackSettings)
    .values({ podId, enabled: false, visibility: "everyone", token: newFeedbackToken(), updatedAt: nowIso() })
    .onConflictDoNothing();
  const [made] = await db.select().from(feedbackSettings).where(eq(feedbackSettings.podId, podId)).limit(1);
  if (!made) throw new Error(`feedback settings of pod ${podId} were not stored`);
  return made;
}

/** One message for an unknown token and a disabled collection: the answer must not tell them apart. */
export const UNKNOWN_TOKEN = "feedback not found: the link is unknown, rotated or no longer collecting";

/**
 * The live pod collecting feedback under `token` (the public endpoints): an unknown token, a
 * disabled collection and a deleted pod are the same 404.
 */
export async function findCollectingPod(
  db: Db,
  token: string,
): Promise<Result<{ podId: string; podName: string }>> {
  const [row] = await db
    .select({ podId: pods.id, podName: pods.name })
    .from(feedbackSettings)
    .innerJoin(pods, eq(pods.id, feedbackSettings.podId))
    .where(
      and(eq(feedbackSettings.token, token), eq(feedbackSettings.enabled, true), ne(pods.status, "deleted")),
    )
    .limit(1);
  return row ? ok(row) : fail("not_found", UNKNOWN_TOKEN);
}

/** The team's pod and its comment `id`: another pod's comment is the same 404 as a missing one. */
export async function findTeamFeedback(
  db: Db,
  teamId: string,
  name: string,
  id: string,
): Promise<Result<PodWithHost & { comment: FeedbackRow }>> {
  const found = await findTeamPod(db, teamId, name);
  if (!found.ok) return found;
  const [comment] = await db
    .select()
    .from(feedback)
    .where(and(eq(feedback.id, id), eq(feedback.podId, found.value.pod.id)))
    .limit(1);
  return comment ? ok({ ...found.value, comment }) : fail("not_found", `pod ${name} has no feedback ${id}`);
}
