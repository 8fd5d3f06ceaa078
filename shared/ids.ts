const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lowercase: no i, l, o, u

/** Random base32 string from the platform CSPRNG (WebCrypto exists in workerd and Node alike). */
export function randomToken(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = "";
  for (const byte of bytes) out += ALPHABET[byte & 31];
  return out;
}

/** Opaque, prefixed ids (`usr_…`, `team_…`) so a stray id in a log says what it names. */
export const newId = (prefix: string): string => `${prefix}_${randomToken(20)}`;
