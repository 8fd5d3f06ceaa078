/**
 * Sealing secrets at rest (AES-256-GCM), with nothing of the Worker's environment in it: the Worker
 * (worker/lib/secret-box.ts) and the key rotation (`npm run secrets:rotate`, scripts/secrets-rotate.ts)
 * seal and open the same way.
 *
 * Stored form: `v2.<key id>.<iv>.<ciphertext>` (base64; the key id is the first 6 bytes of the key's
 * SHA-256, base64url), sealed with the associated data `podhost:<purpose>:<owner>`: a value opens
 * only as what it was sealed for (a git token, a service password …) and for its own row (the pod,
 * the invitation), so a sealed value copied into another row or column by a writer of D1 does not
 * open there. The key id tells which key of a ring sealed a value, so a rotation can keep the
 * previous key for the values not yet re-sealed.
 *
 * `v1.<iv>.<ciphertext>`, from before associated data, still opens (with the current or the previous
 * key, no associated data) until the rotation re-seals it as v2.
 */

/** What a sealed secret is: part of its associated data. */
export type SecretPurpose =
  | "git-token"
  | "git-webhook-secret"
  | "service-password"
  | "invitation-token"
  | "alert-webhook-secret";

/** The Worker secret each kind of key is held in (`<name>_PREVIOUS` during a rotation). */
export type SecretKeyName = "GIT_TOKEN_KEY" | "SERVICE_PASSWORD_KEY" | "INVITATION_TOKEN_KEY";
export const SECRET_KEY_NAMES: readonly SecretKeyName[] = [
  "GIT_TOKEN_KEY",
  "SERVICE_PASSWORD_KEY",
  "INVITATION_TOKEN_KEY",
];

/** Each purpose's key, and what the 503 of a missing key says is not configured. */
export const SECRET_PURPOSES: Record<SecretPurpose, { key: SecretKeyName; feature: string }> = {
  "git-token": { key: "GIT_TOKEN_KEY", feature: "git deployments" },
  "git-webhook-secret": { key: "GIT_TOKEN_KEY", feature: "git deployments" },
  "service-password": { key: "SERVICE_PASSWORD_KEY", feature: "database services" },
  "invitation-token": { key: "INVITATION_TOKEN_KEY", feature: "invitation links in the owner's list" },
  "alert-webhook-secret": { key: "GIT_TOKEN_KEY", feature: "alert webhooks" },
};

/** The keys one kind of secret opens with: the current one seals; the previous one only opens. */
export interface KeyRing {
  /** 32 bytes, base64 */
  current: string;
  previous?: string;
}

export type Opened = { ok: true; value: string } | { ok: false; reason: "format" | "key" | "decrypt" };

const encoder = new TextEncoder();

const toBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const toBase64Url = (bytes: Uint8Array) =>
  toBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** WebCrypto's key, named the same way in workerd's types and Node's. */
type AesKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

interface ImportedKey {
  id: string;
  key: AesKey;
}

/** imported keys per process or isolate, by the key's text */
const imported = new Map<string, Promise<ImportedKey>>();

/** Why a key's text cannot be a key, or undefined when it can. */
export function keyProblem(raw: string): string | undefined {
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(raw);
  } catch {
    return "is not base64";
  }
  return bytes.length === 32 ? undefined : "must be 32 bytes (base64)";
}

function importKey(raw: string): Promise<ImportedKey> {
  let cached = imported.get(raw);
  if (!cached) {
    const bytes = fromBase64(raw);
    cached = Promise.all([
      crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]),
      crypto.subtle.digest("SHA-256", bytes),
    ]).then(([key, digest]) => ({ key, id: toBase64Url(new Uint8Array(digest).slice(0, 6)) }));
    imported.set(raw, cached);
  }
  return cached;
}

/** The id a value sealed with this key carries (`v2.<id>.…`). */
export const keyId = async (raw: string): Promise<string> => (await importKey(raw)).id;

const associatedData = (purpose: SecretPurpose, owner: string) =>
  encoder.encode(`podhost:${purpose}:${owner}`);

/** Seals with the ring's current key, bound to what the value is and whose it is. */
export async function seal(
  ring: KeyRing,
  purpose: SecretPurpose,
  owner: string,
  plaintext: string,
): Promise<string> {
  const { key, id } = await importKey(ring.current);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: associatedData(purpose, owner) },
    key,
    encoder.encode(plaintext),
  );
  return `v2.${id}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

async function decrypt(key: AesKey, iv: string, sealed: string, additionalData?: Uint8Array) {
  try {
    const plain = await crypto.subtle.decrypt(
      additionalData
        ? { name: "AES-GCM", iv: fromBase64(iv), additionalData }
        : { name: "AES-GCM", iv: fromBase64(iv) },
      key,
      fromBase64(sealed),
    );
    return new TextDecoder().decode(plain);
  } catch {
    return undefined;
  }
}

/**
 * Opens a stored value as `purpose` of `owner`. `key`: no key of the ring sealed it; `decrypt`: the
 * key is right but the value was not sealed for this purpose and owner (or was altered).
 */
export async function open(
  ring: KeyRing,
  purpose: SecretPurpose,
  owner: string,
  stored: string,
): Promise<Opened> {
  const keys = [ring.current, ...(ring.previous ? [ring.previous] : [])];
  const parts = stored.split(".");
  if (parts[0] === "v2" && parts.length === 4) {
    const [, id, iv, sealed] = parts as [string, string, string, string];
    for (const raw of keys) {
      const k = await importKey(raw);
      if (k.id !== id) continue;
      const plain = await decrypt(k.key, iv, sealed, associatedData(purpose, owner));
      return plain === undefined ? { ok: false, reason: "decrypt" } : { ok: true, value: plain };
    }
    return { ok: false, reason: "key" };
  }
  if (parts[0] === "v1" && parts.length === 3) {
    const [, iv, sealed] = parts as [string, string, string];
    for (const raw of keys) {
      const plain = await decrypt((await importKey(raw)).key, iv, sealed);
      if (plain !== undefined) return { ok: true, value: plain };
    }
    return { ok: false, reason: "key" };
  }
  return { ok: false, reason: "format" };
}

/** Whether a stored value is already sealed as v2 with this key (the rotation skips nothing else). */
export async function sealedWith(raw: string, stored: string): Promise<boolean> {
  return stored.startsWith(`v2.${await keyId(raw)}.`);
}
