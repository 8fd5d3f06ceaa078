import { desc, eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import { type ApiTokenRow, apiTokens } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { DAY, isoIn, nowIso } from "../../lib/time";
import type { Caller } from "../auth/caller";
import { API_TOKEN_PREFIX } from "../auth/credentials";
import type { ServiceContext } from "../context";

export interface ApiTokenView {
  id: string;
  user_id: string;
  team_id: string;
  name: string;
  prefix: string;
  last_used_at: string | null;
  expires_at: string | null;
  created_at: string;
}

export const toApiTokenView = (t: ApiTokenRow): ApiTokenView => ({
  id: t.id,
  user_id: t.userId,
  team_id: t.teamId,
  name: t.name,
  prefix: t.prefix,
  last_used_at: t.lastUsedAt,
  expires_at: t.expiresAt,
  created_at: t.createdAt,
});

export async function listApiTokens(ctx: ServiceContext, userId: string): Promise<ApiTokenView[]> {
  const rows = await ctx.db
    .select()
    .from(apiTokens)
    .where(eq(apiTokens.userId, userId))
    .orderBy(desc(apiTokens.createdAt));
  return rows.map(toApiTokenView);
}

/** A new `ipk_` token bound to the caller's active team. The value is returned here and never again. */
export async function createApiToken(
  ctx: ServiceContext,
  caller: Caller,
  input: { name: string; expires_in_days?: number },
): Promise<Result<ApiTokenView & { token: string }>> {
  if (caller.via === "connector") {
    return fail("forbidden", "a connector session cannot create API tokens; sign in to create one");
  }
  const token = `${API_TOKEN_PREFIX}${randomToken(40)}`;
  const row: ApiTokenRow = {
    id: newId("tok"),
    userId: caller.user.id,
    teamId: caller.teamId,
    name: input.name,
    prefix: token.slice(0, 12),
    tokenHash: await sha256Hex(token),
    lastUsedAt: null,
    expiresAt: input.expires_in_days ? isoIn(input.expires_in_days * DAY) : null,
    createdAt: nowIso(),
  };
  await ctx.db.insert(apiTokens).values(row);
  return ok({ ...toApiTokenView(row), token });
}

export async function revokeApiToken(
  ctx: ServiceContext,
  userId: string,
  tokenId: string,
): Promise<Result<void>> {
  const [row] = await ctx.db
    .select({ userId: apiTokens.userId })
    .from(apiTokens)
    .where(eq(apiTokens.id, tokenId))
    .limit(1);
  if (!row) return fail("not_found", "API token not found");
  if (row.userId !== userId) return fail("forbidden", "you can only revoke your own API tokens");
  await ctx.db.delete(apiTokens).where(eq(apiTokens.id, tokenId));
  return ok(undefined);
}
