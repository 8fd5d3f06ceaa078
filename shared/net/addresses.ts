/**
 * Which addresses the service's outbound fetches may reach: one policy for URL imports (the Worker's
 * fetch, worker/services/imports/fetch.ts) and repository URLs (the Worker's check and the agent's
 * resolve-and-pin before git runs, shared/git/repo-url.ts). Refused: loopback, private, link-local
 * (cloud metadata), carrier-grade NAT, unique-local, multicast and other special addresses in every
 * spelling the WHATWG URL parser leaves (it already turns `2130706433`, `0x7f.1` and `017700000001`
 * into `127.0.0.1`), IPv6 forms that carry an IPv4 address (mapped and compatible ones by the
 * address they carry; NAT64, 6to4 and Teredo whole), documentation ranges, IPv6 outside global
 * unicast (2000::/3), `localhost` and internal-only names.
 * Pure: no DNS, no Node or Workers API, so both sides run the same code.
 */

/**
 * Why a host name may not be fetched, or null. Expects the URL parser's canonical host (an IPv6
 * literal in brackets). The reason reads "<host> is <what>; imports fetch public addresses only".
 */
export function refusedHost(hostname: string, allowLoopback: boolean): string | null {
  const host = hostname.toLowerCase().endsWith(".")
    ? hostname.toLowerCase().slice(0, -1)
    : hostname.toLowerCase();
  if (host.startsWith("[")) {
    const v6 = parseIpv6(host.slice(1, -1));
    if (!v6) return `${hostname} is not a valid IPv6 address`;
    const reason = refusedIpv6(v6);
    return reason ? `${hostname} is ${reason}; imports fetch public addresses only` : null;
  }
  const v4 = parseIpv4(host);
  if (v4) {
    if (allowLoopback && v4[0] === 127) return null;
    const reason = refusedIpv4(v4);
    return reason ? `${hostname} is ${reason}; imports fetch public addresses only` : null;
  }
  if (host === "localhost" || host.endsWith(".localhost"))
    return `${hostname} is a loopback name; imports fetch public addresses only`;
  if (!host.includes(".")) return `${hostname} is not a public host name`;
  for (const suffix of INTERNAL_SUFFIXES)
    if (host.endsWith(suffix)) return `${hostname} is an internal name; imports fetch public addresses only`;
  return null;
}

const INTERNAL_SUFFIXES = [".local", ".internal", ".intranet", ".lan", ".home.arpa", ".corp", ".localdomain"];

/** Dotted-quad IPv4 as the URL parser leaves it, or null. */
export function parseIpv4(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (p.length === 0 || p.length > 3) return null;
    for (const ch of p) if (ch < "0" || ch > "9") return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

function refusedIpv4([a = 0, b = 0, c = 0]: number[]): string | null {
  if (a === 0) return 'a "this network" address';
  if (a === 10) return "a private address (10.0.0.0/8)";
  if (a === 127) return "a loopback address";
  if (a === 169 && b === 254) return "a link-local address (169.254.0.0/16, cloud metadata)";
  if (a === 172 && b >= 16 && b <= 31) return "a private address (172.16.0.0/12)";
  if (a === 192 && b === 168) return "a private address (192.168.0.0/16)";
  if (a === 100 && b >= 64 && b <= 127) return "a shared address (100.64.0.0/10)";
  if (a === 192 && b === 0 && c === 0) return "a protocol assignment address (192.0.0.0/24)";
  if (a === 192 && b === 0 && c === 2) return "a documentation address";
  if (a === 198 && (b === 18 || b === 19)) return "a benchmarking address (198.18.0.0/15)";
  if (a === 198 && b === 51 && c === 100) return "a documentation address";
  if (a === 203 && b === 0 && c === 113) return "a documentation address";
  if (a >= 224) return "a multicast or reserved address";
  return null;
}

/** Eight 16-bit groups, or null. Accepts `::` and a trailing dotted IPv4. */
export function parseIpv6(text: string): number[] | null {
  if (text.length === 0 || text.length > 45) return null;
  let tail: number[] = [];
  let body = text;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (!v4) return null;
    tail = [((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0)];
    const prefix = text.slice(0, lastColon + 1);
    body = prefix.endsWith("::") ? prefix : text.slice(0, lastColon);
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const group = (s: string) => (s === "" ? [] : s.split(":"));
  const head = group(halves[0] ?? "");
  const rest = halves.length === 2 ? group(halves[1] ?? "") : [];
  const parse = (g: string) => {
    if (g.length === 0 || g.length > 4) return null;
    for (const ch of g.toLowerCase())
      if (!((ch >= "0" && ch <= "9") || (ch >= "a" && ch <= "f"))) return null;
    return Number.parseInt(g, 16);
  };
  const nums = [...head, ...rest].map(parse);
  if (nums.some((n) => n === null)) return null;
  const headNums = nums.slice(0, head.length) as number[];
  const restNums = nums.slice(head.length) as number[];
  const missing = 8 - tail.length - headNums.length - restNums.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  return [...headNums, ...new Array(halves.length === 2 ? missing : 0).fill(0), ...restNums, ...tail];
}

function refusedIpv6(g: number[]): string | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return "the unspecified address";
  if (zeroUpTo(7) && g7 === 1) return "a loopback address";
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) carry an IPv4 address: judged by it
  if ((zeroUpTo(5) && g5 === 0xffff) || zeroUpTo(6)) {
    const v4 = refusedIpv4([g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff]);
    return v4 ? `an IPv6 form of ${v4}` : null;
  }
  // Translation and tunnels are refused whole, whatever IPv4 address they carry: the translator or
  // relay that would carry the request is the provider's or a stranger's box, not the public host.
  if (g0 === 0x64 && g1 === 0xff9b && !g2 && !g3 && !g4 && !g5) return "a NAT64 address (64:ff9b::/96)";
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return "a local-use NAT64 address (64:ff9b:1::/48)";
  if (g0 === 0x2002) return "a 6to4 address (2002::/16)";
  if (g0 === 0x2001 && g1 === 0) return "a Teredo address (2001::/32)";
  if (g0 === 0x2001 && g1 === 0xdb8) return "a documentation address (2001:db8::/32)";
  if (g0 === 0x2001 && g1 < 0x200) return "an IETF protocol assignment (2001::/23)";
  if ((g0 & 0xfff0) === 0x3ff0) return "a documentation address (3fff::/20)";
  if (g0 === 0x100 && !g1 && !g2 && !g3) return "a discard-only address (100::/64)";
  if ((g0 & 0xfe00) === 0xfc00) return "a unique local address (fc00::/7)";
  if ((g0 & 0xffc0) === 0xfe80) return "a link-local address (fe80::/10)";
  if ((g0 & 0xffc0) === 0xfec0) return "a site-local address (fec0::/10)";
  if ((g0 & 0xff00) === 0xff00) return "a multicast address";
  // Only 2000::/3 is global unicast; everything else is reserved or special-purpose.
  if ((g0 & 0xe000) !== 0x2000) return "not a global unicast address (2000::/3)";
  return null;
}

/**
 * An address as a rate-limit key (the Worker's per-IP limits, the SSH gateway's failed logins). An
 * IPv6 address counts as its /64: that is the one network a subscriber or a server is given, 2^64
 * addresses, and keyed on the whole address each would be a budget of its own. An IPv4-mapped one
 * (`::ffff:a.b.c.d`, as Node reports IPv4 peers of a dual-stack socket) counts as its IPv4 address.
 */
export function rateLimitAddress(ip: string): string {
  if (!ip.includes(":")) return ip;
  const g = parseIpv6(ip);
  if (!g) return ip.slice(0, 64); // not an address (a zone id, garbage): counted as it is
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) {
    return [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff].join(".");
  }
  return `${[g0, g1, g2, g3].map((n) => n.toString(16)).join(":")}::/64`;
}
