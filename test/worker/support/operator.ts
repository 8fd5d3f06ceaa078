import { env } from "cloudflare:workers";
import { newId } from "../../../shared/ids";

const sha256Hex = async (text: string) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

/** A token as `npm run host:drain` mints it (scripts/lib/operator.ts), valid for `ttlMs`. */
export async function operatorToken(ttlMs = 60_000): Promise<string> {
  const token = `opt_${newId("t").slice(2)}${newId("t").slice(2)}`;
  const now = Date.now();
  await env.DB.prepare(
    "INSERT INTO operator_tokens (id, token_hash, expires_at, created_at) VALUES (?, ?, ?, ?)",
  )
    .bind(
      newId("opt"),
      await sha256Hex(token),
      new Date(now + ttlMs).toISOString(),
      new Date(now).toISOString(),
    )
    .run();
  return token;
}
