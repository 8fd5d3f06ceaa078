import { env } from "cloudflare:workers";
import { newId, randomToken } from "../../../shared/ids";
import { createDb } from "../../../worker/db/client";
import { pods } from "../../../worker/db/schema";
import { sha256Hex } from "../../../worker/lib/crypto";
import type { TestUser } from "./client";
import { connect } from "./connectors";

/**
 * Direct access to the Worker's D1 for what the API cannot do on demand: read the mail outbox, age a
 * token past its expiry, or give a team a pod before the pods API exists.
 */
export const db = createDb(env.DB);

export interface OutboxMail {
  to: string;
  subject: string;
  body: string;
}

export async function mailsTo(to: string): Promise<OutboxMail[]> {
  const { results } = await env.DB.prepare(
    'SELECT "to", subject, body FROM mail_outbox WHERE "to" = ? ORDER BY created_at, rowid',
  )
    .bind(to.toLowerCase())
    .all<OutboxMail>();
  return results;
}

/** The token in the newest mail to `to` whose body has a `<label>: <token>` line. */
export async function tokenFromMail(
  to: string,
  label: "Reset token" | "Verification token",
): Promise<string> {
  const mails = await mailsTo(to);
  for (const mail of mails.reverse()) {
    const match = new RegExp(`${label}: (\\S+)`).exec(mail.body);
    if (match?.[1]) return match[1];
  }
  throw new Error(`no mail to ${to} with a "${label}" line`);
}

/** Moves every one-time token of the account (reset, verification) into the past. */
export async function expireOneTimeTokens(email: string) {
  await env.DB.prepare(
    "UPDATE one_time_tokens SET expires_at = ? WHERE user_id = (SELECT id FROM users WHERE email = ?)",
  )
    .bind(new Date(Date.now() - 1000).toISOString(), email.toLowerCase())
    .run();
}

export async function expireSessionsOf(userId: string) {
  await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE user_id = ?")
    .bind(new Date(Date.now() - 1000).toISOString(), userId)
    .run();
}

export async function expireApiToken(tokenId: string) {
  await env.DB.prepare("UPDATE api_tokens SET expires_at = ? WHERE id = ?")
    .bind(new Date(Date.now() - 1000).toISOString(), tokenId)
    .run();
}

export async function expireInvitation(invitationId: string) {
  await env.DB.prepare("UPDATE invitations SET expires_at = ? WHERE id = ?")
    .bind(new Date(Date.now() - 1000).toISOString(), invitationId)
    .run();
}

/** A connector session: the access token of a real OAuth grant (register, PKCE, consent, token). */
export async function connectorSession(user: TestUser): Promise<string> {
  return (await connect(user)).accessToken;
}

/** A pod row owned by the team, as the pods API will write it. */
export async function insertPod(
  teamId: string,
  status: (typeof pods.$inferInsert)["status"] = "running",
): Promise<string> {
  const now = new Date().toISOString();
  const id = newId("pod");
  await db.insert(pods).values({
    id,
    name: `p${randomToken(12)}`,
    teamId,
    preset: "static",
    status,
    planSlug: "launch",
    region: "eu-central",
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

export async function first<T>(sql: string, ...params: unknown[]): Promise<T | null> {
  return env.DB.prepare(sql)
    .bind(...params)
    .first<T>();
}

export { sha256Hex };
