import { fail, ok, type Result } from "../../shared/errors";
import type { Bindings } from "../env";
import {
  type KeyRing,
  keyProblem,
  open,
  SECRET_PURPOSES,
  type SecretKeyName,
  type SecretPurpose,
  seal,
} from "./sealing";

/**
 * Secrets at rest in D1, sealed with a key held as a Worker secret (worker/lib/sealing.ts:
 * AES-256-GCM, a fresh IV each time, the purpose and owner as associated data). A reader of D1 (a
 * backup, a leaked export) learns nothing, and a writer of D1 cannot move a sealed value to another
 * row or column. Each kind of secret has its own key (its own secret name), so one leaked key opens
 * one kind: git tokens and webhook secrets (GIT_TOKEN_KEY), database service passwords
 * (SERVICE_PASSWORD_KEY), invitation tokens (INVITATION_TOKEN_KEY). `<NAME>_PREVIOUS`, set during a
 * rotation (docs/security.md "Rotating the keys at rest"), opens what the previous key sealed.
 */

export interface SecretBox {
  /** Whether secrets can be sealed at all (the key is configured and well formed). */
  usable(): Result<true>;
  /** Seals `plaintext` as this purpose's secret of `owner` (the id of the row it is stored in). */
  seal(owner: string, plaintext: string): Promise<Result<string>>;
  open(owner: string, stored: string): Promise<Result<string>>;
}

/** The ring of `env[keyName]` and `env[keyName_PREVIOUS]`, or why there is none. */
export function keyRingOf(env: Bindings, keyName: SecretKeyName, feature: string): Result<KeyRing> {
  const current = env[keyName];
  if (!current) return fail("unavailable", `${feature} are not configured: the ${keyName} secret is missing`);
  const previous = env[`${keyName}_PREVIOUS`] || undefined;
  for (const [name, raw] of [
    [keyName, current],
    [`${keyName}_PREVIOUS`, previous],
  ] as const) {
    const problem = raw === undefined ? undefined : keyProblem(raw);
    if (problem) return fail("internal", `${name} ${problem}`);
  }
  return ok({ current, previous });
}

export function secretBox(env: Bindings, purpose: SecretPurpose): SecretBox {
  const { key: keyName, feature } = SECRET_PURPOSES[purpose];
  return {
    usable() {
      const ring = keyRingOf(env, keyName, feature);
      return ring.ok ? ok(true) : ring;
    },
    async seal(owner, plaintext) {
      const ring = keyRingOf(env, keyName, feature);
      if (!ring.ok) return ring;
      return ok(await seal(ring.value, purpose, owner, plaintext));
    },
    async open(owner, stored) {
      const ring = keyRingOf(env, keyName, feature);
      if (!ring.ok) return ring;
      const opened = await open(ring.value, purpose, owner, stored);
      if (opened.ok) return ok(opened.value);
      switch (opened.reason) {
        case "format":
          return fail("internal", `a secret stored under ${keyName} has an unknown format`);
        case "key":
          return fail("internal", `a stored secret cannot be decrypted (was ${keyName} changed?)`);
        case "decrypt":
          return fail("internal", `a stored ${purpose} does not belong where it is stored`);
      }
    },
  };
}
