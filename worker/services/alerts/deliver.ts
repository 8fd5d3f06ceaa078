import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { alertChannels, alertDeliveries, teamMembers, users } from "../../db/schema";
import type { Bindings } from "../../env";
import { secretBox } from "../../lib/secret-box";
import { nowIso } from "../../lib/time";
import { createMailer } from "../mail/mailer";
import { alertMail } from "../mail/templates";
import type { AlertPayload } from "./raise";
import { signatureHeader } from "./signing";
import { checkChannelUrl } from "./target";
import { channelRoles } from "./views";

/**
 * One delivery of an alert to its channel, as the alert-deliver Workflow's step runs it (docs/alerts.md):
 * - email: a mail to each member of the team with one of the channel's roles (the mail has its own
 *   retries, docs/mail.md);
 * - webhook: the payload as JSON, signed (signing.ts), with `Podhost-Delivery` and `Podhost-Event`;
 * - chat: `{text, content}`, which Slack's and Discord's incoming webhooks both take.
 * The URL is checked again first (its name's records may have changed since it was saved), no
 * redirect is followed, and the answer decides: 2xx delivered; 5xx, 408, 429 or no answer, another
 * attempt later; any other status, failed for good.
 */

export type DeliverOutcome =
  | { kind: "delivered"; statusCode: number | null }
  | { kind: "failed"; statusCode: number | null; error: string }
  | { kind: "retry"; statusCode: number | null; error: string };

const SEND_TIMEOUT_MS = 10_000;

/** Slack's mrkdwn control characters; names a user chose cannot make links or mentions there. */
const slackEscape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export async function loadPendingDelivery(db: Db, deliveryId: string) {
  const [row] = await db
    .select({ delivery: alertDeliveries, channel: alertChannels })
    .from(alertDeliveries)
    .leftJoin(alertChannels, eq(alertChannels.id, alertDeliveries.channelId))
    .where(and(eq(alertDeliveries.id, deliveryId), eq(alertDeliveries.status, "pending")));
  return row ?? null;
}

export async function deliver(env: Bindings, db: Db, deliveryId: string): Promise<DeliverOutcome> {
  const row = await loadPendingDelivery(db, deliveryId);
  if (!row) return { kind: "failed", statusCode: null, error: "not pending" };
  const { delivery, channel } = row;
  if (!channel) return { kind: "failed", statusCode: null, error: "the channel was deleted" };
  const payload = JSON.parse(delivery.payload) as AlertPayload;
  if (channel.kind === "email") {
    const recipients = await db
      .select({ email: users.email })
      .from(teamMembers)
      .innerJoin(users, eq(users.id, teamMembers.userId))
      .where(and(eq(teamMembers.teamId, channel.teamId), inArray(teamMembers.role, channelRoles(channel))));
    const mailer = createMailer(db, env);
    for (const { email } of recipients) {
      await mailer.send(
        alertMail(email, {
          state: delivery.state,
          teamName: payload.team.name,
          podName: payload.pod?.name ?? null,
          summary: payload.summary,
          url: payload.url,
        }),
      );
    }
    return { kind: "delivered", statusCode: null };
  }
  const target = await checkChannelUrl(env, channel.url ?? "");
  if (!target.ok) return { kind: "failed", statusCode: null, error: target.message };
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "podhost-alerts/1",
  };
  let body: string;
  if (channel.kind === "webhook") {
    const secret = await secretBox(env, "alert-webhook-secret").open(channel.id, channel.secretSealed ?? "");
    if (!secret.ok)
      return { kind: "failed", statusCode: null, error: `the signing secret: ${secret.message}` };
    body = delivery.payload;
    headers["podhost-delivery"] = delivery.id;
    headers["podhost-event"] = payload.type;
    headers["podhost-signature"] = await signatureHeader(secret.value, body, Math.floor(Date.now() / 1000));
  } else {
    const line = `[podhost] ${payload.team.name}: ${payload.summary} ${payload.url}`;
    body = JSON.stringify({
      text: slackEscape(line),
      content: line.slice(0, 2000),
      // Discord: no @everyone or role pings from a name in the text
      allowed_mentions: { parse: [] },
    });
  }
  let res: Response;
  try {
    res = await fetch(target.value.href, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
  } catch (error) {
    return { kind: "retry", statusCode: null, error: `no answer: ${String(error).slice(0, 200)}` };
  }
  await res.body?.cancel();
  const code = res.status;
  if (code >= 200 && code < 300) return { kind: "delivered", statusCode: code };
  if (code >= 300 && code < 400)
    return { kind: "failed", statusCode: code, error: `answered ${code}: redirects are not followed` };
  if (code >= 500 || code === 408 || code === 429)
    return { kind: "retry", statusCode: code, error: `answered ${code}` };
  return { kind: "failed", statusCode: code, error: `answered ${code}` };
}

export async function recordDeliveryAttempt(db: Db, deliveryId: string, outcome: DeliverOutcome) {
  const end =
    outcome.kind === "delivered"
      ? { status: "delivered" as const, deliveredAt: nowIso(), lastError: null }
      : outcome.kind === "failed"
        ? { status: "failed" as const, lastError: outcome.error.slice(0, 500) }
        : { lastError: outcome.error.slice(0, 500) };
  await db
    .update(alertDeliveries)
    .set({ ...end, statusCode: outcome.statusCode, attempts: sql`${alertDeliveries.attempts} + 1` })
    .where(and(eq(alertDeliveries.id, deliveryId), eq(alertDeliveries.status, "pending")));
}

export async function recordDeliveryGaveUp(db: Db, deliveryId: string, reason: string) {
  await db
    .update(alertDeliveries)
    .set({ status: "failed", lastError: reason.slice(0, 500) })
    .where(and(eq(alertDeliveries.id, deliveryId), eq(alertDeliveries.status, "pending")));
}

/** A pending delivery this old whose Workflow is missing was never handed over (its start failed). */
const REDISPATCH_AFTER_MS = 10 * 60_000;
const REDISPATCH_PAGE = 50;

/**
 * The cron's `alert-redispatch`: pending deliveries older than ten minutes whose Workflow instance
 * does not exist get one; those whose instance ended without recording an outcome are failed.
 */
export async function redispatchPendingDeliveries(env: Bindings, db: Db, now: number): Promise<number> {
  const stale = await db
    .select({ id: alertDeliveries.id })
    .from(alertDeliveries)
    .where(
      and(
        eq(alertDeliveries.status, "pending"),
        lt(alertDeliveries.createdAt, new Date(now - REDISPATCH_AFTER_MS).toISOString()),
      ),
    )
    .limit(REDISPATCH_PAGE);
  let started = 0;
  for (const { id } of stale) {
    let status: string | null;
    try {
      status = (await (await env.ALERT_DELIVER.get(id)).status()).status;
    } catch {
      status = null; // no such instance
    }
    if (status === null) {
      await env.ALERT_DELIVER.create({ id, params: { deliveryId: id } });
      started++;
    } else if (status === "terminated" || status === "errored") {
      await recordDeliveryGaveUp(db, id, `alert-deliver workflow ${status}`);
    }
  }
  return started;
}
