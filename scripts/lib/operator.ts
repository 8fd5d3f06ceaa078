import { createHash, randomBytes } from "node:crypto";
import { newId } from "../../shared/ids";
import { type D1Target, d1Execute, sqlText } from "./d1";

/** `opt_…`, as worker/http/operator-auth.ts expects */
const OPERATOR_TOKEN_PREFIX = "opt_";

export interface OperatorToken {
  id: string;
  token: string;
}

/**
 * A short-lived operator token for `/operator/*` (docs/operations.md), written straight into D1 with
 * the operator's own database access (wrangler's credentials are what makes one the operator); only
 * its SHA-256 is stored. Delete it with `revokeOperatorToken` once done.
 */
export async function mintOperatorToken(target: D1Target, ttlMs = 6 * 60 * 60_000): Promise<OperatorToken> {
  const token = `${OPERATOR_TOKEN_PREFIX}${randomBytes(30).toString("base64url")}`;
  const hash = createHash("sha256").update(token).digest("hex");
  const id = newId("opt");
  const now = Date.now();
  await d1Execute(
    `INSERT INTO operator_tokens (id, token_hash, expires_at, created_at) VALUES (${sqlText(id)}, ${sqlText(hash)},
      ${sqlText(new Date(now + ttlMs).toISOString())}, ${sqlText(new Date(now).toISOString())});
     DELETE FROM operator_tokens WHERE expires_at < ${sqlText(new Date(now).toISOString())}`,
    target,
  );
  return { id, token };
}

export async function revokeOperatorToken(id: string, target: D1Target): Promise<void> {
  await d1Execute(`DELETE FROM operator_tokens WHERE id = ${sqlText(id)}`, target);
}
