import { and, desc, eq, inArray, lt, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { type ConnectorGrantRow, connectorGrants, teamMembers, teams, users } from "../../db/schema";
import type { Bindings } from "../../env";
import { MINUTE, nowIso } from "../../lib/time";
import { toUserView } from "../auth/accounts";
import type { Resolved } from "../auth/credentials";
import type { ServiceContext } from "../context";
import { authorizationServer, type ConnectorProps, resourceOf } from "./oauth";

export interface ConnectorView {
  id: string;
  client_id: string;
  client_name: string;
  redirect_host: string;
  team_id: string;
  team_name: string;
  last_used_at: string | null;
  expires_at: string;
  created_at: string;
}

/** An OAuth access token is `{userId}:{grantId}:{secret}`; sessions and `ipk_` tokens have no colon. */
export const isConnectorToken = (token: string) => token.split(":").length === 3;

/**
 * A connector access token → the caller, or null when the provider does not know it (unknown,
 * expired, revoked in KV) or its grant row is gone (revoked here: immediate, D1 is consistent), or
 * the user has left the team it was granted on.
 */
export async function resolveConnectorToken(env: Bindings, db: Db, token: string): Promise<Resolved | null> {
  const validated = await authorizationServer(env).validateToken<ConnectorProps>(resourceOf(env), token, env);
  const props = validated?.props;
  if (!props?.connectorId) return null;
  const now = nowIso();
  const [row] = await db
    .select({
      grantId: connectorGrants.id,
      clientName: connectorGrants.clientName,
      teamId: connectorGrants.teamId,
      expiresAt: connectorGrants.expiresAt,
      lastUsedAt: connectorGrants.lastUsedAt,
      user: {
        id: users.id,
        email: users.email,
        name: users.name,
        emailVerifiedAt: users.emailVerifiedAt,
        activeTeamId: users.activeTeamId,
        createdAt: users.createdAt,
      },
    })
    .from(connectorGrants)
    .innerJoin(users, eq(users.id, connectorGrants.userId))
    .innerJoin(
      teamMembers,
      and(eq(teamMembers.teamId, connectorGrants.teamId), eq(teamMembers.userId, connectorGrants.userId)),
    )
    .where(and(eq(connectorGrants.id, props.connectorId), eq(connectorGrants.userId, props.userId)))
    .limit(1);
  if (!row || row.expiresAt <= now) return null;
  const stale = row.lastUsedAt === null || Date.parse(row.lastUsedAt) < Date.now() - MINUTE;
  return {
    caller: {
      user: toUserView(row.user),
      teamId: row.teamId,
      via: "connector",
      connectorId: row.grantId,
      credentialLabel: row.clientName,
    },
    afterResponse: stale
      ? db.update(connectorGrants).set({ lastUsedAt: now }).where(eq(connectorGrants.id, row.grantId))
      : undefined,
  };
}

/**
 * Records a grant approved at consent. The provider's `completeAuthorization` revokes the user's
 * earlier grants to the same client; their rows go too, so the list shows what still works.
 */
export async function recordGrant(db: Db, row: ConnectorGrantRow): Promise<void> {
  await db.batch([
    db.insert(connectorGrants).values(row),
    db
      .delete(connectorGrants)
      .where(
        and(
          eq(connectorGrants.userId, row.userId),
          eq(connectorGrants.clientId, row.clientId),
          ne(connectorGrants.id, row.id),
        ),
      ),
  ]);
}

/** The caller's connector grants on every team, newest first. */
export async function listConnectors(ctx: ServiceContext, userId: string): Promise<ConnectorView[]> {
  const rows = await ctx.db
    .select({ grant: connectorGrants, teamName: teams.name })
    .from(connectorGrants)
    .innerJoin(teams, eq(teams.id, connectorGrants.teamId))
    .where(and(eq(connectorGrants.userId, userId)))
    .orderBy(desc(connectorGrants.createdAt));
  const now = nowIso();
  return rows
    .filter((r) => r.grant.expiresAt > now)
    .map(({ grant: g, teamName }) => ({
      id: g.id,
      client_id: g.clientId,
      client_name: g.clientName,
      redirect_host: g.redirectHost,
      team_id: g.teamId,
      team_name: teamName,
      last_used_at: g.lastUsedAt,
      expires_at: g.expiresAt,
      created_at: g.createdAt,
    }));
}

/**
 * Revokes one of the caller's grants: the row goes first (every token of it is refused from the
 * next request on), then the provider's grant and tokens in KV, found by the id in its metadata.
 * Another user's grant is "not found", as a missing one is.
 */
export async function revokeConnector(
  ctx: ServiceContext,
  userId: string,
  connectorId: string,
): Promise<Result<void>> {
  const deleted = await ctx.db
    .delete(connectorGrants)
    .where(and(eq(connectorGrants.id, connectorId), eq(connectorGrants.userId, userId)))
    .returning({ id: connectorGrants.id });
  if (deleted.length === 0) return fail("not_found", "connector not found");
  const oauth = authorizationServer(ctx.env).getOAuthApi(ctx.env);
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(userId, { cursor });
    for (const grant of page.items) {
      if ((grant.metadata as { connectorId?: string } | undefined)?.connectorId === connectorId) {
        await oauth.revokeGrant(grant.id, userId);
      }
    }
    cursor = page.cursor;
  } while (cursor);
  return ok(undefined);
}

/**
 * Rows of grants past their 30 days, a page per run (cron, worker/scheduled.ts): they resolve nothing
 * and are not listed, this only keeps the table small. The provider's KV records expire by their TTL.
 */
export async function sweepExpiredGrants(db: Db, now: number, page = 500): Promise<number> {
  const expired = db
    .select({ id: connectorGrants.id })
    .from(connectorGrants)
    .where(lt(connectorGrants.expiresAt, new Date(now).toISOString()))
    .limit(page);
  const deleted = await db
    .delete(connectorGrants)
    .where(inArray(connectorGrants.id, expired))
    .returning({ id: connectorGrants.id });
  return deleted.length;
}
