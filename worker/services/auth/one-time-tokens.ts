import { and, eq, gt, isNull } from "drizzle-orm";
import { newId, randomToken } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { oneTimeTokens } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { isoIn, nowIso } from "../../lib/time";

type Purpose = "reset_password" | "verify_email";

export async function issueOneTimeToken(
  db: Db,
  userId: string,
  purpose: Purpose,
  ttlMs: number,
): Promise<string> {
  const token = randomToken(40);
  await db.insert(oneTimeTokens).values({
    id: newId("ott"),
    tokenHash: await sha256Hex(token),
    userId,
    purpose,
    expiresAt: isoIn(ttlMs),
    createdAt: nowIso(),
  });
  return token;
}

/**
 * Marks the token used and returns its user, or null when it is unknown, expired, already used or
 * of another purpose. The conditional UPDATE makes it single-use even under concurrent redemption.
 */
export async function redeemOneTimeToken(db: Db, token: string, purpose: Purpose): Promise<string | null> {
  const now = nowIso();
  const [row] = await db
    .update(oneTimeTokens)
    .set({ usedAt: now })
    .where(
      and(
        eq(oneTimeTokens.tokenHash, await sha256Hex(token)),
        eq(oneTimeTokens.purpose, purpose),
        isNull(oneTimeTokens.usedAt),
        gt(oneTimeTokens.expiresAt, now),
      ),
    )
    .returning({ userId: oneTimeTokens.userId });
  return row?.userId ?? null;
}
