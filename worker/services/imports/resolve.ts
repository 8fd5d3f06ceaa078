import { fail, ok, type Result } from "../../../shared/errors";
import { DEFAULT_DNS_RESOLVER_URL } from "../domains/dns";

/**
 * A host name's addresses over DNS-over-HTTPS (DNS_RESOLVER_URL, the JSON API domain verification
 * uses too): URL imports refuse a name any of whose A or AAAA records is a private address, so a
 * public-looking name cannot point the Worker's fetch inward. (A resolver answering differently at
 * fetch time — DNS rebinding — is not closed by this; docs/imports.md.)
 */

const LOOKUP_TIMEOUT_MS = 5_000;
const TYPES = { A: 1, AAAA: 28 } as const;

export async function lookupAddresses(
  resolverUrl: string | undefined,
  name: string,
): Promise<Result<string[]>> {
  const found: string[] = [];
  let exists = false;
  for (const [type, code] of Object.entries(TYPES)) {
    const url = new URL(resolverUrl || DEFAULT_DNS_RESOLVER_URL);
    url.searchParams.set("name", name);
    url.searchParams.set("type", type);
    let body: { Status?: unknown; Answer?: unknown };
    try {
      const res = await fetch(url, {
        headers: { accept: "application/dns-json" },
        signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
      });
      if (!res.ok)
        return fail(
          "bad_request",
          `url: ${name} could not be resolved (the resolver answered ${res.status})`,
        );
      body = (await res.json()) as typeof body;
    } catch (error) {
      return fail("bad_request", `url: ${name} could not be resolved (${String(error).slice(0, 120)})`);
    }
    if (body.Status === 3) continue;
    if (body.Status !== 0)
      return fail("bad_request", `url: ${name} could not be resolved (DNS status ${String(body.Status)})`);
    exists = true;
    const answers = Array.isArray(body.Answer) ? body.Answer : [];
    for (const a of answers)
      if (a?.type === code && typeof a?.data === "string") found.push(a.data as string);
  }
  if (!exists || found.length === 0)
    return fail("bad_request", `url: ${name} does not resolve to an address`);
  return ok(found);
}
