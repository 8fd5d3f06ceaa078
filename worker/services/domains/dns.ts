import { fail, ok, type Result } from "../../../shared/errors";
import type { Bindings } from "../../env";

/** Cloudflare's DNS-over-HTTPS JSON endpoint: the resolver when DNS_RESOLVER_URL is unset. */
export const DEFAULT_DNS_RESOLVER_URL = "https://cloudflare-dns.com/dns-query";

const TXT = 16;
const LOOKUP_TIMEOUT_MS = 10_000;

interface DohAnswer {
  Status?: unknown;
  Answer?: unknown;
}

/**
 * The TXT strings at `name`, looked up over DNS-over-HTTPS (the JSON API Cloudflare's and Google's
 * resolvers speak: `GET {base}?name=…&type=TXT`, `accept: application/dns-json`). A record's data is
 * one or more quoted strings, which are joined as DNS says they are. A name without records
 * (NXDOMAIN, or no TXT) is `[]`; a resolver that does not answer is 503.
 */
export async function lookupTxt(env: Bindings, name: string): Promise<Result<string[]>> {
  const url = new URL(env.DNS_RESOLVER_URL || DEFAULT_DNS_RESOLVER_URL);
  url.searchParams.set("name", name);
  url.searchParams.set("type", "TXT");
  let body: DohAnswer;
  try {
    const res = await fetch(url, {
      headers: { accept: "application/dns-json" },
      signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
    });
    if (!res.ok) return fail("unavailable", `the DNS resolver answered ${res.status}; try again later`);
    body = (await res.json()) as DohAnswer;
  } catch (error) {
    return fail("unavailable", `the DNS resolver could not be reached (${String(error)}); try again later`);
  }
  // 0 NOERROR, 3 NXDOMAIN: both are answers; anything else (SERVFAIL, REFUSED) is the resolver's failure
  if (body.Status !== 0 && body.Status !== 3)
    return fail(
      "unavailable",
      `the DNS lookup of ${name} failed (status ${String(body.Status)}); try again later`,
    );
  const answers = Array.isArray(body.Answer) ? body.Answer : [];
  return ok(
    answers
      .filter((a): a is { type: number; data: string } => a?.type === TXT && typeof a?.data === "string")
      .map((a) => txtText(a.data)),
  );
}

/** `"a" "b"` → `ab`; an unquoted string is taken as it is. */
export function txtText(data: string): string {
  const parts = [...data.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => (m[1] ?? "").replace(/\\(.)/g, "$1"));
  return parts.length > 0 ? parts.join("") : data;
}
