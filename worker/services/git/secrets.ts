import { fail, ok, type Result } from "../../../shared/errors";
import { randomToken } from "../../../shared/ids";
import type { Bindings } from "../../env";

/**
 * Git secrets at rest: a user's access token and a repository's webhook secret are stored
 * AES-256-GCM encrypted with the GIT_TOKEN_KEY secret (32 random bytes, base64), a fresh 96-bit IV
 * each time: `v1.<iv>.<ciphertext>` in base64. A reader of D1 (a backup, a leaked export) learns
 * nothing; the Worker decrypts a token only to hand it to the host for one command or to call the
 * git host's API, and never returns, logs or records it.
 */

const VERSION = "v1";
const encoder = new TextEncoder();

const toBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

const keys = new Map<string, Promise<CryptoKey>>();

function keyOf(env: Bindings): Result<Promise<CryptoKey>> {
  const raw = env.GIT_TOKEN_KEY;
  if (!raw)
    return fail("unavailable", "git deployments are not configured: the GIT_TOKEN_KEY secret is missing");
  let cached = keys.get(raw);
  if (!cached) {
    let bytes: Uint8Array;
    try {
      bytes = fromBase64(raw);
    } catch {
      return fail("internal", "GIT_TOKEN_KEY is not base64");
    }
    if (bytes.length !== 32) return fail("internal", "GIT_TOKEN_KEY must be 32 bytes (base64)");
    cached = crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
    keys.set(raw, cached);
  }
  return ok(cached);
}

/** Whether secrets can be stored at all (the key is configured and well formed). */
export const secretsUsable = (env: Bindings): Result<true> => {
  const key = keyOf(env);
  return key.ok ? ok(true) : key;
};

export async function encryptSecret(env: Bindings, plaintext: string): Promise<Result<string>> {
  const key = keyOf(env);
  if (!key.ok) return key;
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await key.value,
    encoder.encode(plaintext),
  );
  return ok(`${VERSION}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`);
}

export async function decryptSecret(env: Bindings, stored: string): Promise<Result<string>> {
  const key = keyOf(env);
  if (!key.ok) return key;
  const [version, iv, sealed] = stored.split(".");
  if (version !== VERSION || !iv || !sealed)
    return fail("internal", "a stored git secret has an unknown format");
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(iv) },
      await key.value,
      fromBase64(sealed),
    );
    return ok(new TextDecoder().decode(plain));
  } catch {
    return fail("internal", "a stored git secret cannot be decrypted (was GIT_TOKEN_KEY changed?)");
  }
}

/** A webhook secret: 192 bits, the shared secret of the git host's hook and of the generic webhook. */
export const newWebhookSecret = () => `whs_${randomToken(40)}`;

/** Equal strings, in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= (x[i] ?? 0) ^ (y[i % (y.length || 1)] ?? 0);
  return diff === 0;
}
