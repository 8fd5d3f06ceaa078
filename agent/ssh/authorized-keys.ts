import type { ParsedKey } from "ssh2";
import { type KeyOptions, NO_OPTIONS, parseKeyOptions } from "./key-options";
import { ssh2 } from "./ssh2";

/**
 * Reading `~/.ssh/authorized_keys` the way sshd does, as pure functions. A line is
 * `[options] keytype base64 [comment]`; options may hold quoted strings with spaces
 * (`command="echo hi"`), so a line that does not start with a key is retried after them. Anything
 * that does not parse (blank lines, `#` comments, garbage, key types ssh2 cannot verify) is skipped,
 * never an error: the file is the pod user's to edit. The options field is read by key-options.ts;
 * a line whose options sshd would refuse still names its key (the API can remove it) but
 * authorizes nothing.
 */

export interface AuthorizedKey {
  /** the line as written (trimmed) */
  line: string;
  /** `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, … */
  type: string;
  /** the public key in SSH wire format: what a client sends, what two lines are compared by */
  blob: Buffer;
  parsed: ParsedKey;
  /** what the line's options allow; null when they do not parse (the line lets nobody in) */
  options: KeyOptions | null;
}

/** the file sizes the agent reads and writes; a bigger file is someone else's problem */
export const MAX_AUTHORIZED_KEYS_BYTES = 256 * 1024;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function keyAt(text: string): Omit<AuthorizedKey, "line" | "options"> | null {
  const [type, data] = text.split(/[ \t]+/, 2);
  if (!type || !data || !BASE64.test(data)) return null;
  const parsed = ssh2().utils.parseKey(`${type} ${data}`);
  if (parsed instanceof Error || Array.isArray(parsed)) return null;
  const blob = parsed.getPublicSSH();
  // The type named on the line must be the one inside the blob (sshd refuses a mismatch too).
  if (parsed.type !== type || blob.length === 0) return null;
  return { type, blob, parsed };
}

/** Where the options field ends: at the first blank outside double quotes (`\"` escapes). */
function optionsEnd(line: string): number | null {
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted && c === "\\" && line[i + 1] === '"') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && (c === " " || c === "\t")) return i;
  }
  return null;
}

/** One line of the file, or null when it holds no usable key. */
export function parseAuthorizedKeyLine(raw: string): AuthorizedKey | null {
  const line = raw.trim();
  if (!line || line.startsWith("#")) return null;
  const direct = keyAt(line);
  if (direct) return { line, ...direct, options: NO_OPTIONS };
  const end = optionsEnd(line);
  const optioned = end === null ? null : keyAt(line.slice(end).trimStart());
  return optioned && end !== null
    ? { line, ...optioned, options: parseKeyOptions(line.slice(0, end)) }
    : null;
}

export function parseAuthorizedKeys(text: string): AuthorizedKey[] {
  return text.split(/\r?\n/).flatMap((l) => parseAuthorizedKeyLine(l) ?? []);
}

/** The listed key whose blob is exactly `blob` (what the client offers), if any. */
export function findKey(keys: readonly AuthorizedKey[], blob: Buffer): AuthorizedKey | undefined {
  return keys.find((k) => k.blob.equals(blob));
}

/** Append `line` unless a line with the same key (type and data; comments and options aside) is there. */
export function withKey(text: string, key: AuthorizedKey): { text: string; added: boolean } {
  if (findKey(parseAuthorizedKeys(text), key.blob)) return { text, added: false };
  const base = text === "" || text.endsWith("\n") ? text : `${text}\n`;
  return { text: `${base}${key.line}\n`, added: true };
}

/** Drop every line holding the key; every other line (comments, blank lines, other keys) stays as it was. */
export function withoutKey(text: string, key: AuthorizedKey): { text: string; removed: boolean } {
  const lines = text.split("\n");
  const kept = lines.filter((l) => !parseAuthorizedKeyLine(l)?.blob.equals(key.blob));
  return { text: kept.join("\n"), removed: kept.length !== lines.length };
}
