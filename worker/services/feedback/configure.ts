import { and, eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import type { FeedbackVhost } from "../../../shared/protocol/feedback";
import { type FeedbackSettingsRow, type FeedbackVisibility, feedbackSettings } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext, TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { callTarget, type PodTarget, targetOf } from "../pods/target";
import { newFeedbackToken, settingsOf } from "./lookup";
import { type FeedbackSettingsView, toSettingsView } from "./views";

/** rounds of sending before a settings change is left to the next one (each round ends on a re-read) */
const MAX_ROUNDS = 3;
const RENDER_TIMEOUT_MS = 30_000;

export interface FeedbackSettingsInput {
  name: string;
  enabled?: boolean;
  visibility?: FeedbackVisibility;
  rotate?: boolean;
}

/** Where pods load the widget from: the Worker's own `GET /feedback/widget.js`. */
export const widgetScriptUrl = (publicUrl: string) => new URL("/feedback/widget.js", publicUrl).toString();

export const vhostOf = (row: FeedbackSettingsRow, scriptUrl: string): FeedbackVhost => ({
  enabled: row.enabled,
  visibility: row.visibility,
  token: row.token,
  scriptUrl,
});

const sameRow = (a: FeedbackSettingsRow, b: FeedbackSettingsRow) =>
  a.enabled === b.enabled && a.visibility === b.visibility && a.token === b.token;

/**
 * `POST /api/pods/{name}/feedback/settings`: any of `enabled`, `visibility`, `rotate` (a new token:
 * earlier links and the old token stop working at once). The new settings are written to D1, then
 * the pod's host renders its vhost with them (`pod.feedback.set`), so the widget shows or goes
 * without a restart of the pod. When the host cannot render it (the pod is stopped, so it has no
 * address; nginx refuses) the answer is the host's 500 and the settings are put back as they were,
 * in D1 and on the host (which keeps its previous file). As with custom domains, the row is read
 * again after each send and sent again while another change got in between, so the host ends with
 * what D1 says.
 */
export async function configureFeedback({
  ctx,
  teamId,
  input,
}: TeamCall<FeedbackSettingsInput>): Promise<Result<FeedbackSettingsView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  const target = targetOf(found.value);
  if (!target.ok) return target;
  const before = await settingsOf(ctx.db, pod.id);
  // only the fields asked for: two changes at once (one enabling, one choosing the visibility)
  // compose instead of the later one writing back what it read before the other
  const updatedAt = nowIso();
  await ctx.db
    .update(feedbackSettings)
    .set({
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.visibility !== undefined ? { visibility: input.visibility } : {}),
      ...(input.rotate ? { token: newFeedbackToken() } : {}),
      updatedAt,
    })
    .where(eq(feedbackSettings.podId, pod.id));
  const next = await settingsOf(ctx.db, pod.id);
  const rendered = await pushSettings(ctx, target.value, next);
  if (!rendered.ok) {
    // put back what was there, unless another change has replaced ours meanwhile
    await ctx.db
      .update(feedbackSettings)
      .set({
        enabled: before.enabled,
        visibility: before.visibility,
        token: before.token,
        updatedAt: before.updatedAt,
      })
      .where(and(eq(feedbackSettings.podId, pod.id), eq(feedbackSettings.updatedAt, updatedAt)));
    return rendered;
  }
  const changes = {
    enabled: rendered.value.enabled,
    visibility: rendered.value.visibility,
    ...(input.rotate ? { rotated: true } : {}),
  };
  await recordEventStatement(
    ctx.db,
    pod.id,
    "feedback_updated",
    `feedback on pod ${pod.name} ${rendered.value.enabled ? `collected (visible to ${rendered.value.visibility === "everyone" ? "every visitor" : "visitors of the share link"})` : "disabled"}${input.rotate ? "; the link was rotated" : ""}`,
    changes,
  );
  return ok(toSettingsView(rendered.value, pod.name, ctx.env.POD_DOMAIN));
}

/** Send the row to the host until what it got is what D1 says (MAX_ROUNDS at most). */
async function pushSettings(
  ctx: ServiceContext,
  target: PodTarget,
  row: FeedbackSettingsRow,
): Promise<Result<FeedbackSettingsRow>> {
  const scriptUrl = widgetScriptUrl(ctx.env.PUBLIC_URL);
  let sent = row;
  for (let round = 1; ; round++) {
    const told = await callTarget(
      ctx,
      target,
      "pod.feedback.set",
      { name: target.found.pod.name, feedback: vhostOf(sent, scriptUrl) },
      { timeoutMs: RENDER_TIMEOUT_MS },
    );
    if (!told.ok) return told;
    const now = await settingsOf(ctx.db, target.found.pod.id);
    if (sameRow(now, sent) || round >= MAX_ROUNDS) return ok(now);
    sent = now;
  }
}
