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

const TOKEN_LINKS = {
  "Reset token": "/app/reset-password?token=",
  "Verification token": "/app/verify-email?token=",
} as const;

/** The token in the newest mail to `to` whose text links to the dashboard page that takes it. */
export async function tokenFromMail(to: string, label: keyof typeof TOKEN_LINKS): Promise<string> {
  const mails = await mailsTo(to);
  const link = TOKEN_LINKS[label];
  for (const mail of mails.reverse()) {
    const at = mail.body.indexOf(link);
    if (at === -1) continue;
    const token = /^[^\s&]+/.exec(mail.body.slice(at + link.length))?.[0];
    if (token) return decodeURIComponent(token);
  }
  throw new Error(`no mail to ${to} with a link to ${link}`);
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
