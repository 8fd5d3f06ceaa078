import type { Result } from "../../../shared/errors";
import { randomToken } from "../../../shared/ids";
import type { Bindings } from "../../env";
import { secretBox } from "../../lib/secret-box";

/**
 * Git secrets at rest: a user's access token and a repository's webhook secret are stored
 * sealed with the GIT_TOKEN_KEY secret (worker/lib/secret-box.ts: AES-256-GCM, `v1.<iv>.<ciphertext>`). A reader of D1 (a backup, a leaked export) learns
 * nothing; the Worker decrypts a token only to hand it to the host for one command or to call the
 * git host's API, and never returns, logs or records it.
 */

const box = (env: Bindings) => secretBox(env, "GIT_TOKEN_KEY", "git deployments");

/** Whether secrets can be stored at all (the key is configured and well formed). */
export const secretsUsable = (env: Bindings): Result<true> => box(env).usable();

export const encryptSecret = (env: Bindings, plaintext: string): Promise<Result<string>> =>
  box(env).seal(plaintext);

export const decryptSecret = (env: Bindings, stored: string): Promise<Result<string>> =>
  box(env).open(stored);

/** A webhook secret: 192 bits, the shared secret of the git host's hook and of the generic webhook. */
export const newWebhookSecret = () => `whs_${randomToken(40)}`;

const encoder = new TextEncoder();

/** Equal strings, in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= (x[i] ?? 0) ^ (y[i % (y.length || 1)] ?? 0);
  return diff === 0;
}
