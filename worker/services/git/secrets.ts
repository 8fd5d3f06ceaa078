import type { Result } from "../../../shared/errors";
import { randomToken } from "../../../shared/ids";
import type { Bindings } from "../../env";
import { secretBox } from "../../lib/secret-box";

/**
 * Git secrets at rest: a user's access token and a repository's webhook secret are stored
 * sealed with the GIT_TOKEN_KEY secret (worker/lib/secret-box.ts: AES-256-GCM, bound to the pod's id
 * and to which of the two it is). A reader of D1 (a backup, a leaked export) learns nothing; the
 * Worker decrypts a token only to hand it to the host for one command or to call the git host's API,
 * and never returns, logs or records it.
 */

const token = (env: Bindings) => secretBox(env, "git-token");
const webhookSecret = (env: Bindings) => secretBox(env, "git-webhook-secret");

/** Whether secrets can be stored at all (the key is configured and well formed). */
export const secretsUsable = (env: Bindings): Result<true> => token(env).usable();

/** The pod's access token, sealed for its `git_configs` row. */
export const sealToken = (env: Bindings, podId: string, plaintext: string): Promise<Result<string>> =>
  token(env).seal(podId, plaintext);
export const openToken = (env: Bindings, podId: string, stored: string): Promise<Result<string>> =>
  token(env).open(podId, stored);

/** The pod's webhook secret, sealed for its `git_configs` row. */
export const sealWebhookSecret = (env: Bindings, podId: string, plaintext: string): Promise<Result<string>> =>
  webhookSecret(env).seal(podId, plaintext);
export const openWebhookSecret = (env: Bindings, podId: string, stored: string): Promise<Result<string>> =>
  webhookSecret(env).open(podId, stored);

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
