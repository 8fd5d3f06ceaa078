import { and, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { apiTokens, sessions, teamMembers, teams, users } from "../../db/schema";
import type { Bindings } from "../../env";
import { sha256Hex } from "../../lib/crypto";
import { createIsolateCache } from "../../lib/isolate-cache";
import { MINUTE, nowIso } from "../../lib/time";
import { isConnectorToken, resolveConnectorToken } from "../connectors/grants";
import { toUserView } from "./accounts";
import type { Caller } from "./caller";

export const API_TOKEN_PREFIX = "ipk_";

/** Resolved credentials by token hash (see isolate-cache for the staleness bound). */
const callers = createIsolateCache<Caller>();

export interface Resolved {
  caller: Caller;
  /** work to finish after the response (bookkeeping such as `last_used_at`) */
  afterResponse?: Promise<unknown>;
}

/**
 * Turns a raw credential (cookie value or bearer token) into a caller, or null when it is unknown,
 * expired or revoked. One indexed query per credential kind (a connector's OAuth token also reads
 * its record in OAUTH_KV).
 */
export async function resolveCredential(db: Db, env: Bindings, token: string): Promise<Resolved | null> {
  const tokenHash = await sha256Hex(token);
  const cached = callers.get(tokenHash);
  if (cached) return { caller: cached };
  const resolved = isConnectorToken(token)
    ? await resolveConnectorToken(env, db, token)
    : await lookupCredential(db, token, tokenHash);
  if (resolved) callers.set(tokenHash, resolved.caller);
  return resolved;
}

const userColumns = {
  id: users.id,
  email: users.email,
  name: users.name,
  emailVerifiedAt: users.emailVerifiedAt,
  activeTeamId: users.activeTeamId,
  createdAt: users.createdAt,
};

async function lookupCredential(db: Db, token: string, tokenHash: string): Promise<Resolved | null> {
  const now = nowIso();
  if (token.startsWith(API_TOKEN_PREFIX)) return resolveApiToken(db, tokenHash, now);

  // The active team counts only while the membership exists: the join reads it in the same query,
  // so a member removed a moment ago (or a switch that raced the removal) acts on their personal
  // team from the next request on, never on the team they left.
  const [row] = await db
    .select({
      sessionId: sessions.id,
      user: userColumns,
      membership: teamMembers.id,
      personalTeamId: sql<
        string | null
      >`(SELECT ${teams.id} FROM ${teams} WHERE ${teams.ownerId} = ${users.id} AND ${teams.accountType} = 'personal' LIMIT 1)`,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(teamMembers, and(eq(teamMembers.teamId, users.activeTeamId), eq(teamMembers.userId, users.id)))
    .where(and(eq(sessions.tokenHash, tokenHash), gt(sessions.expiresAt, now)))
    .limit(1);
  if (!row) return null;
  const teamId = row.membership ? row.user.activeTeamId : row.personalTeamId;
  if (!teamId) return null;
  return {
    caller: {
      user: toUserView({ ...row.user, activeTeamId: teamId }),
      teamId,
      via: "session",
      sessionId: row.sessionId,
    },
  };
}

async function resolveApiToken(db: Db, tokenHash: string, now: string): Promise<Resolved | null> {
  // The join on team_members makes a token stop working on a team its owner has left.
  const [row] = await db
    .select({
      tokenId: apiTokens.id,
      prefix: apiTokens.prefix,
      teamId: apiTokens.teamId,
      expiresAt: apiTokens.expiresAt,
      lastUsedAt: apiTokens.lastUsedAt,
      user: userColumns,
    })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .innerJoin(
      teamMembers,
      and(eq(teamMembers.teamId, apiTokens.teamId), eq(teamMembers.userId, apiTokens.userId)),
    )
    .where(eq(apiTokens.tokenHash, tokenHash))
    .limit(1);
  if (!row || (row.expiresAt !== null && row.expiresAt <= now)) return null;

  // `last_used_at` at minute precision: one write a minute per token, not one per request.
  const stale = row.lastUsedAt === null || Date.parse(row.lastUsedAt) < Date.now() - MINUTE;
  return {
    caller: {
      user: toUserView(row.user),
      teamId: row.teamId,
      via: "api_token",
      apiTokenId: row.tokenId,
      credentialLabel: row.prefix,
    },
    afterResponse: stale
      ? db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, row.tokenId))
      : undefined,
  };
}
