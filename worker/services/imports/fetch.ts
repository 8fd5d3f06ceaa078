import { fail, ok, type Result } from "../../../shared/errors";
import type { Bindings } from "../../env";
import { lookupAddresses } from "./resolve";

/**
 * The Worker's outbound fetches for URL imports, refusing what a stranger could aim them at:
 * loopback, private, link-local (cloud metadata), carrier-grade NAT, multicast and other special
 * addresses in every spelling (the WHATWG URL parser already turns `2130706433`, `0x7f.1` and
 * `017700000001` into `127.0.0.1`), `localhost` and internal-only names, credentials in the URL, and
 * any of these reached through a redirect: redirects are followed by hand, each hop checked again.
 * Bodies are read up to a cap; every fetch shares the import's deadline.
 *
 * `ALLOW_IMPORT_LOOPBACK=true` (tests, local development) lets 127.0.0.0/8 through, like
 * ALLOW_HTTP_GIT_LOOPBACK for repositories; nothing else opens.
 */

const MAX_REDIRECTS = 5;

export interface FetchBudget {
  /** aborts every fetch of one import when its budget is spent */
  signal: AbortSignal;
  budgetMs: number;
  allowLoopback: boolean;
  resolverUrl: string | undefined;
  /** host names already checked in this import: their refusal, or null when they may be fetched */
  checkedNames: Map<string, string | null>;
}

export function newBudget(
  env: Pick<Bindings, "ALLOW_IMPORT_LOOPBACK" | "DNS_RESOLVER_URL">,
  budgetMs: number,
): FetchBudget {
  return {
    signal: AbortSignal.timeout(budgetMs),
    budgetMs,
    allowLoopback: env.ALLOW_IMPORT_LOOPBACK === "true",
    resolverUrl: env.DNS_RESOLVER_URL,
    checkedNames: new Map(),
  };
}

/** An IP literal needs no lookup: the URL parser's canonical forms. */
const isIpLiteral = (host: string) => host.startsWith("[") || parseIpv4(host) !== null;

/**
 * A host name's DNS answers checked like a literal address (once per name and import): refused when
 * any A or AAAA record is a private, loopback or link-local address.
 */
async function checkResolved(url: URL, budget: FetchBudget): Promise<string | null> {
  const host = url.hostname;
  if (isIpLiteral(host)) return null;
  const known = budget.checkedNames.get(host);
  if (known !== undefined) return known;
  const addresses = await lookupAddresses(budget.resolverUrl, host);
  let refusal: string | null = addresses.ok ? null : addresses.message;
  if (addresses.ok) {
    for (const address of addresses.value) {
      const literal = address.includes(":") ? `[${address}]` : address;
      const reason = refusedHost(literal, false);
      if (reason) {
        refusal = `url: ${host} resolves to ${address}, which ${reason.slice(reason.indexOf(" is ") + 1)}`;
        break;
      }
    }
  }
  budget.checkedNames.set(host, refusal);
  return refusal;
}

/** Parses and checks a URL given by the caller (or found in a redirect): a 400 naming the problem. */
export function checkTarget(raw: string, allowLoopback: boolean, field = "url"): Result<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail("bad_request", `${field}: not a valid absolute URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return fail("bad_request", `${field}: only http and https URLs can be imported`);
  if (url.username || url.password)
    return fail("bad_request", `${field}: credentials in the URL are not accepted`);
  const refused = refusedHost(url.hostname, allowLoopback);
  if (refused) return fail("bad_request", `${field}: ${refused}`);
  return ok(url);
}

/** Why a host name may not be fetched, or null. Expects the URL parser's canonical host. */
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
function parseIpv4(host: string): number[] | null {
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
function parseIpv6(text: string): number[] | null {
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
  const embedded = [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff];
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry an IPv4 address
  if (
    (zeroUpTo(5) && g5 === 0xffff) ||
    zeroUpTo(6) ||
    (g0 === 0x64 && g1 === 0xff9b && !g2 && !g3 && !g4 && !g5)
  ) {
    const v4 = refusedIpv4(embedded);
    return v4 ? `an IPv6 form of ${v4}` : null;
  }
  if (g0 === 0x2002) {
    const v4 = refusedIpv4([g1 >> 8, g1 & 0xff, g2 >> 8, g2 & 0xff]);
    return v4 ? `a 6to4 form of ${v4}` : null;
  }
  if ((g0 & 0xfe00) === 0xfc00) return "a unique local address (fc00::/7)";
  if ((g0 & 0xffc0) === 0xfe80) return "a link-local address (fe80::/10)";
  if ((g0 & 0xffc0) === 0xfec0) return "a site-local address (fec0::/10)";
  if ((g0 & 0xff00) === 0xff00) return "a multicast address";
  if (g0 === 0x2001 && g1 === 0xdb8) return "a documentation address";
  return null;
}

export interface Fetched {
  url: URL;
  status: number;
  contentType: string;
  bytes: Uint8Array;
}

/**
 * GET `url` (already checked) following at most MAX_REDIRECTS redirects, each checked like the first;
 * the body read up to `maxBytes`. A failure is a 400 naming what went wrong (the spec's "failed fetch").
 */
export async function guardedFetch(
  url: URL,
  budget: FetchBudget,
  maxBytes: number,
): Promise<Result<Fetched>> {
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const refused = await checkResolved(current, budget);
    if (refused) return fail("bad_request", hop > 0 ? `${refused} (redirected from ${url.href})` : refused);
    let res: Response;
    try {
      res = await fetch(current.href, {
        redirect: "manual",
        signal: budget.signal,
        headers: { "user-agent": "podhost-import/1 (+https://podhost.dev)", accept: "text/html,*/*;q=0.8" },
      });
    } catch (error) {
      if (budget.signal.aborted)
        return fail(
          "bad_request",
          `url: fetching ${current.href} did not finish within the ${budget.budgetMs / 1000} s budget`,
        );
      return fail("bad_request", `url: fetching ${current.href} failed: ${String(error).slice(0, 200)}`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has("location")) {
      await res.body?.cancel();
      const next = checkTarget(
        new URL(res.headers.get("location") ?? "", current).href,
        budget.allowLoopback,
        "url",
      );
      if (!next.ok) return fail("bad_request", `${next.message} (redirected from ${current.href})`);
      current = next.value;
      continue;
    }
    const body = await readCapped(res, maxBytes);
    if (!body.ok) return fail("bad_request", `url: ${current.href}: ${body.message}`);
    return ok({
      url: current,
      status: res.status,
      contentType: (res.headers.get("content-type") ?? "").toLowerCase(),
      bytes: body.value,
    });
  }
  return fail("bad_request", `url: more than ${MAX_REDIRECTS} redirects from ${url.href}`);
}

async function readCapped(res: Response, maxBytes: number): Promise<Result<Uint8Array>> {
  const declared = Number(res.headers.get("content-length"));
  if (declared > maxBytes) {
    await res.body?.cancel();
    return fail("bad_request", `the response is larger than ${maxBytes} bytes`);
  }
  if (!res.body) return ok(new Uint8Array());
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        return fail("bad_request", `the response is larger than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (error) {
    return fail("bad_request", `reading the response failed: ${String(error).slice(0, 200)}`);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return ok(out);
}
