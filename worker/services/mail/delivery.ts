import { and, eq, lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { mailOutbox } from "../../db/schema";
import type { Bindings } from "../../env";
import { MINUTE, nowIso } from "../../lib/time";
import type { ProviderMail } from "./resend";

/**
 * The mail-send Workflow's D1 side (docs/mail.md): what to send, and each attempt's outcome. Every
 * write is conditional on the row still being `queued`, so a second instance (the cron's redispatch
 * racing a late start) cannot turn a `sent` mail back.
 */
export async function loadQueuedMail(db: Db, mailId: string): Promise<ProviderMail | null> {
  const [row] = await db
    .select()
    .from(mailOutbox)
    .where(and(eq(mailOutbox.id, mailId), eq(mailOutbox.status, "queued")));
  return row ? { to: row.to, subject: row.subject, text: row.body, html: row.html } : null;
}

const bounded = (error: string) => error.slice(0, 500);

export async function recordAttempt(db: Db, mailId: string, error: string): Promise<void> {
  await db
    .update(mailOutbox)
    .set({ attempts: sql`${mailOutbox.attempts} + 1`, lastError: bounded(error) })
    .where(and(eq(mailOutbox.id, mailId), eq(mailOutbox.status, "queued")));
}

export async function recordSent(db: Db, mailId: string, providerId: string): Promise<void> {
  await db
    .update(mailOutbox)
    .set({ status: "sent", attempts: sql`${mailOutbox.attempts} + 1`, providerId, sentAt: nowIso() })
    .where(and(eq(mailOutbox.id, mailId), eq(mailOutbox.status, "queued")));
}

/** `countAttempt`: the failing attempt was not recorded yet (a refusal); retries exhausted already were. */
export async function recordFailed(
  db: Db,
  mailId: string,
  error: string,
  countAttempt: boolean,
): Promise<void> {
  await db
    .update(mailOutbox)
    .set({
      status: "failed",
      lastError: bounded(error),
      ...(countAttempt ? { attempts: sql`${mailOutbox.attempts} + 1` } : {}),
    })
    .where(and(eq(mailOutbox.id, mailId), eq(mailOutbox.status, "queued")));
}

/** A queued mail this old whose Workflow is missing was never handed over (its start failed). */
const REDISPATCH_AFTER_MS = 10 * MINUTE;
const REDISPATCH_PAGE = 50;

/**
 * The cron's `mail-redispatch`: queued mails older than ten minutes whose Workflow instance does not
 * exist get one; those whose instance ended without recording an outcome (terminated) are failed.
 */
export async function redispatchQueuedMail(env: Bindings, db: Db, now: number): Promise<number> {
  const stale = await db
    .select({ id: mailOutbox.id })
    .from(mailOutbox)
    .where(
      and(
        eq(mailOutbox.status, "queued"),
        lt(mailOutbox.createdAt, new Date(now - REDISPATCH_AFTER_MS).toISOString()),
      ),
    )
    .limit(REDISPATCH_PAGE);
  let started = 0;
  for (const { id } of stale) {
    let status: string | null = null;
    try {
      status = (await (await env.MAIL_SEND.get(id)).status()).status;
    } catch {
      status = null; // no such instance
    }
    if (status === null) {
      await env.MAIL_SEND.create({ id, params: { mailId: id } });
      started++;
    } else if (status === "terminated" || status === "errored") {
      await recordFailed(db, id, `mail-send workflow ${status}`, false);
    }
  }
  return started;
}
