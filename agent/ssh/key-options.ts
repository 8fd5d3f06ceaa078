import { isIP } from "node:net";

/**
 * The options field of an authorized_keys line (`from="10.0.0.0/8",no-pty ssh-ed25519 AAAA…`),
 * read and applied the way sshd does (sshd(8), AUTHORIZED_KEYS FILE FORMAT), as pure functions.
 * A line whose options do not parse — an unknown option, a bad value, `from=` given twice — is
 * skipped by sshd, and so here: it authorizes nothing.
 *
 * What the gateway enforces: `from=` (the client's address), `expiry-time=`, `command=` (a forced
 * command, the client's own in SSH_ORIGINAL_COMMAND), `no-pty` / `restrict` (no terminal; `pty`
 * after `restrict` allows one again). Forwarding of any kind is refused for every key anyway, so
 * `no-port-forwarding`, `permitopen=` and the like change nothing; `environment=` is ignored as
 * sshd does by default (PermitUserEnvironment no). `cert-authority` lines name a CA, not a key that
 * may log in, and certificates are not accepted: such a line authorizes nothing.
 */
export interface KeyOptions {
  /** `from=` patterns the client's address must match */
  from?: string;
  /** `command=`: runs instead of what the client asks for */
  command?: string;
  /** no terminal may be allocated */
  noPty: boolean;
  /** `expiry-time=`: not accepted from this instant on (ms since the epoch) */
  expiresAt?: number;
}

export const NO_OPTIONS: KeyOptions = Object.freeze({ noPty: false });

/** Options that only set a flag sshd knows (forwarding, rc, security-key touch): accepted, no effect here. */
const INERT_FLAGS = new Set([
  "no-port-forwarding",
  "port-forwarding",
  "no-agent-forwarding",
  "agent-forwarding",
  "no-x11-forwarding",
  "x11-forwarding",
  "no-user-rc",
  "user-rc",
  "no-touch-required",
  "touch-required",
  "verify-required",
]);
/** Options with a value that have no effect here (forwarding is refused, environment is ignored). */
const INERT_VALUES = new Set(["environment", "permitopen", "permitlisten", "tunnel", "principals"]);

/** `YYYYMMDD[HHMM[SS]]`, local time, or UTC with a trailing `Z` (sshd's parse_absolute_time). */
function parseExpiry(value: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?(Z?)$/.exec(value);
  if (!m) return null;
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0] = m.slice(1, 7).map((x) => Number(x ?? 0));
  const date = m[7] ? new Date(Date.UTC(y, mo - 1, d, h, mi, s)) : new Date(y, mo - 1, d, h, mi, s);
  const back = m[7]
    ? [
        date.getUTCFullYear(),
        date.getUTCMonth() + 1,
        date.getUTCDate(),
        date.getUTCHours(),
        date.getUTCMinutes(),
      ]
    : [date.getFullYear(), date.getMonth() + 1, date.getDate(), date.getHours(), date.getMinutes()];
  // 20250231 or 24:61: no such time (a DST gap may move a local time by an hour; sshd lets mktime do that too)
  if (back[0] !== y || back[1] !== mo || back[2] !== d || h > 23 || mi > 59 || s > 59) return null;
  return date.getTime();
}

const OPTION_NAME = /[A-Za-z0-9-]+/y;

/** Parse an options field; null when sshd would refuse the line. */
export function parseKeyOptions(field: string): KeyOptions | null {
  const out: KeyOptions = { noPty: false };
  let i = 0;
  while (i < field.length) {
    OPTION_NAME.lastIndex = i;
    const name = OPTION_NAME.exec(field)?.[0];
    if (!name) return null;
    i += name.length;
    let value: string | undefined;
    if (field[i] === "=") {
      if (field[i + 1] !== '"') return null;
      value = "";
      for (i += 2; ; i++) {
        if (i >= field.length) return null; // unterminated
        const c = field[i];
        if (c === '"') break;
        if (c === "\\" && field[i + 1] === '"') {
          value += '"';
          i++;
        } else value += c;
      }
      i++; // the closing quote
    }
    if (i < field.length) {
      if (field[i] !== ",") return null;
      i++;
      if (i === field.length) return null; // a trailing comma
    }
    const key = name.toLowerCase();
    if (value === undefined) {
      if (key === "restrict" || key === "no-pty") out.noPty = true;
      else if (key === "pty") out.noPty = false;
      else if (!INERT_FLAGS.has(key)) return null; // unknown, or cert-authority (see above)
      continue;
    }
    if (key === "command") {
      if (out.command !== undefined) return null;
      out.command = value;
    } else if (key === "from") {
      if (out.from !== undefined || !validPatterns(value)) return null;
      out.from = value;
    } else if (key === "expiry-time") {
      const at = parseExpiry(value);
      if (at === null) return null;
      out.expiresAt = Math.min(out.expiresAt ?? at, at);
    } else if (!INERT_VALUES.has(key)) return null;
  }
  return out;
}

/** May a client at `ip` log in with a key carrying `options`, at `now`? */
export function keyPermits(options: KeyOptions, ip: string, now = Date.now()): boolean {
  if (options.expiresAt !== undefined && now >= options.expiresAt) return false;
  return options.from === undefined || fromMatches(options.from, ip);
}

/** `::ffff:10.1.2.3` (an IPv4 client of a dual-stack listener) → `10.1.2.3`, as sshd sees it. */
const plainAddress = (ip: string) =>
  (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip) ? ip.slice(7) : ip).toLowerCase();

/** sshd copies each `from=` entry into a 1024-byte buffer and refuses a longer one; so do we. */
export const MAX_FROM_PATTERN_CHARS = 1023;
/** More entries than anyone lists by hand: a longer list is refused rather than walked. */
export const MAX_FROM_PATTERNS = 128;

/** The entries of a `from=` list, or null when there are too many or one is too long. */
function fromEntries(patterns: string): string[] | null {
  const entries = patterns.split(",", MAX_FROM_PATTERNS + 1);
  if (entries.length > MAX_FROM_PATTERNS) return null;
  return entries.some((e) => e.length > MAX_FROM_PATTERN_CHARS) ? null : entries;
}

/**
 * A `from=` list: comma-separated entries, each an address, an `address/masklen` network or a
 * pattern with `*` and `?`, optionally negated with `!`. The client is let in when some entry
 * matches and no negated one does. Without reverse DNS (sshd's UseDNS no) the address stands for
 * the host name too. A network with bits set past its mask is an error, which denies, and so is a
 * list over the caps above.
 */
export function fromMatches(patterns: string, clientIp: string): boolean {
  const entries = fromEntries(patterns);
  if (!entries) return false;
  const ip = plainAddress(clientIp);
  const addr = addressBytes(ip);
  let matched = false;
  for (const raw of entries) {
    const negated = raw.startsWith("!");
    const entry = (negated ? raw.slice(1) : raw).toLowerCase();
    if (entry === "") return false;
    const net = parseNetwork(entry);
    if (net === "invalid") return false;
    const hit = net ? addr !== null && inNetwork(addr, net) : wildcardMatch(entry, ip);
    if (hit && negated) return false;
    if (hit) matched = true;
  }
  return matched;
}

function validPatterns(patterns: string): boolean {
  return (
    fromEntries(patterns)?.every((raw) => {
      const entry = raw.startsWith("!") ? raw.slice(1) : raw;
      return entry !== "" && parseNetwork(entry.toLowerCase()) !== "invalid";
    }) ?? false
  );
}

interface Network {
  bytes: Uint8Array;
  bits: number;
}

/** An address or `address/bits`; null for anything else (a pattern); "invalid" for a bad network. */
function parseNetwork(entry: string): Network | null | "invalid" {
  const slash = entry.indexOf("/");
  const host = slash === -1 ? entry : entry.slice(0, slash);
  const bytes = addressBytes(host);
  if (!bytes) return slash === -1 ? null : "invalid";
  const max = bytes.length * 8;
  const bitsText = slash === -1 ? String(max) : entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max) return "invalid";
  const bits = Number(bitsText);
  // sshd: "inconsistent mask length" — 10.0.0.1/8 is refused, not read as 10.0.0.0/8
  for (let b = bits; b < max; b++) {
    if ((bytes[b >> 3] ?? 0) & (0x80 >> (b & 7))) return "invalid";
  }
  return { bytes, bits };
}

function inNetwork(addr: Uint8Array, net: Network): boolean {
  if (addr.length !== net.bytes.length) return false;
  for (let b = 0; b < net.bits; b++) {
    const mask = 0x80 >> (b & 7);
    if (((addr[b >> 3] ?? 0) & mask) !== ((net.bytes[b >> 3] ?? 0) & mask)) return false;
  }
  return true;
}

/** An IPv4 or IPv6 address as 4 or 16 bytes; null when `text` is not one. */
function addressBytes(text: string): Uint8Array | null {
  const kind = isIP(text);
  if (kind === 4) return Uint8Array.from(text.split(".").map(Number));
  if (kind !== 6) return null;
  // a trailing dotted quad (`::ffff:10.1.2.3`) as two hex words, a zone (`%eth0`) dropped
  const hex = text
    .replace(/%.*$/, "")
    .replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a: string, b: string, c: string, d: string) =>
      [(Number(a) << 8) | Number(b), (Number(c) << 8) | Number(d)].map((w) => w.toString(16)).join(":"),
    );
  const [head, tail] = hex.split("::");
  const words = (part: string | undefined) =>
    part ? part.split(":").map((w) => Number.parseInt(w, 16)) : [];
  const front = words(head);
  const back = words(tail);
  const all =
    tail === undefined
      ? front
      : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  if (all.length !== 8) return null;
  const out = new Uint8Array(16);
  all.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/**
 * sshd's match_pattern (`*` any run, `?` one character, everything else literal), without its
 * recursion and without a RegExp: the pattern is the pod user's own text, so a matcher that can
 * backtrack (`from="****…x"` once held the agent's only thread for minutes) is not an option. This
 * is the two-pointer wildcard walk: on a mismatch only the last `*` seen takes one more character,
 * earlier stars never move again (whatever they could have absorbed, the last one can too), so it
 * runs in O(pattern × subject) steps at worst.
 */
export function wildcardMatch(pattern: string, subject: string): boolean {
  let p = 0;
  let s = 0;
  let star = -1; // where the last `*` is in the pattern
  let resume = 0; // the subject position that `*` has absorbed up to
  while (s < subject.length) {
    const c = pattern[p];
    if (c === "*") {
      star = p++;
      resume = s;
    } else if (c !== undefined && (c === "?" || c === subject[s])) {
      p++;
      s++;
    } else if (star !== -1) {
      p = star + 1;
      s = ++resume;
    } else return false;
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
