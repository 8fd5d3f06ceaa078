import { and, eq, gt } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
import { operatorTokens } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

/** Operator tokens are `opt_…`; minted into D1 by the host scripts (scripts/lib/operator.ts). */
export const OPERATOR_TOKEN_PREFIX = "opt_";

/**
 * An operator's token as a Bearer credential, for `/operator/*` (docs/operations.md). There is no
 * API to mint one: `npm run host:drain` writes a short-lived one straight into D1 with the
 * operator's own database credential (wrangler's), uses it and deletes it. Only its SHA-256 is
 * stored; an expired token is refused like an unknown one. No cache: every call reads the row, so
 * a deleted token stops working at once.
 */
export const requireOperatorToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!token?.startsWith(OPERATOR_TOKEN_PREFIX))
    throw new ApiError("unauthorized", "operator token required");
  const [row] = await c
    .get("db")
    .select({ id: operatorTokens.id })
    .from(operatorTokens)
    .where(
      and(
        eq(operatorTokens.tokenHash, await sha256Hex(token)),
        gt(operatorTokens.expiresAt, new Date().toISOString()),
      ),
    )
    .limit(1);
  if (!row) throw new ApiError("unauthorized", "unknown or expired operator token");
  await next();
};
