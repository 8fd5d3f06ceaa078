import { eq } from "drizzle-orm";
import { newId, randomToken } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { sessions } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { DAY, isoIn, nowIso } from "../../lib/time";

export const SESSION_TTL_MS = 30 * DAY;

/** A new random session token; only its hash is stored. Returns the token to hand to the client once. */
export async function createSession(db: Db, userId: string): Promise<{ token: string; expiresAt: string }> {
  const token = randomToken(40);
  const expiresAt = isoIn(SESSION_TTL_MS);
  await db.insert(sessions).values({
    id: newId("ses"),
    tokenHash: await sha256Hex(token),
    userId,
    // connector sessions are OAuth grants now (connector_grants, services/connectors/); the column stays
    kind: "session",
    expiresAt,
    createdAt: nowIso(),
  });
  return { token, expiresAt };
}

export const endSession = (db: Db, sessionId: string) =>
  db.delete(sessions).where(eq(sessions.id, sessionId));

export const endAllSessionsStatement = (db: Db, userId: string) =>
  db.delete(sessions).where(eq(sessions.userId, userId));
