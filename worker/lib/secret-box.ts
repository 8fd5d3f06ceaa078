import { fail, ok, type Result } from "../../shared/errors";
import type { Bindings } from "../env";

/**
 * Secrets at rest in D1, sealed with a key held as a Worker secret: AES-256-GCM with a 32-byte key
 * (base64) and a fresh 96-bit IV each time, stored as `v1.<iv>.<ciphertext>` in base64. A reader of
 * D1 (a backup, a leaked export) learns nothing. Each kind of secret has its own key (its own secret
 * name), so one leaked key opens one kind: git tokens and webhook secrets (GIT_TOKEN_KEY), database
 * service passwords (SERVICE_PASSWORD_KEY).
 */

export type SecretKeyName = "GIT_TOKEN_KEY" | "SERVICE_PASSWORD_KEY";

export interface SecretBox {
  /** Whether secrets can be sealed at all (the key is configured and well formed). */
  usable(): Result<true>;
  seal(plaintext: string): Promise<Result<string>>;
  open(stored: string): Promise<Result<string>>;
}

const VERSION = "v1";
const encoder = new TextEncoder();

const toBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** imported keys per isolate, by the secret's value */
const keys = new Map<string, Promise<CryptoKey>>();

/**
 * The box of the key in `env[keyName]`; `purpose` names what it is for in the 503 a missing key
 * gives ("git deployments", "database services").
 */
export function secretBox(env: Bindings, keyName: SecretKeyName, purpose: string): SecretBox {
  const keyOf = (): Result<Promise<CryptoKey>> => {
    const raw = env[keyName];
    if (!raw) return fail("unavailable", `${purpose} are not configured: the ${keyName} secret is missing`);
    let cached = keys.get(raw);
    if (!cached) {
      let bytes: Uint8Array;
      try {
        bytes = fromBase64(raw);
      } catch {
        return fail("internal", `${keyName} is not base64`);
      }
      if (bytes.length !== 32) return fail("internal", `${keyName} must be 32 bytes (base64)`);
      cached = crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
      keys.set(raw, cached);
    }
    return ok(cached);
  };

  return {
    usable() {
      const key = keyOf();
      return key.ok ? ok(true) : key;
    },
    async seal(plaintext) {
      const key = keyOf();
      if (!key.ok) return key;
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv },
        await key.value,
        encoder.encode(plaintext),
      );
      return ok(`${VERSION}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`);
    },
    async open(stored) {
      const key = keyOf();
      if (!key.ok) return key;
      const [version, iv, sealed] = stored.split(".");
      if (version !== VERSION || !iv || !sealed)
        return fail("internal", `a secret stored under ${keyName} has an unknown format`);
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: fromBase64(iv) },
          await key.value,
          fromBase64(sealed),
        );
        return ok(new TextDecoder().decode(plain));
      } catch {
        return fail("internal", `a stored secret cannot be decrypted (was ${keyName} changed?)`);
      }
    },
  };
}
