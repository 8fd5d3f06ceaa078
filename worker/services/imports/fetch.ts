import { fail, ok, type Result } from "../../../shared/errors";
import { parseIpv4, refusedHost } from "../../../shared/net/addresses";
import type { Bindings } from "../../env";
import { lookupAddresses } from "./resolve";

/**
 * The Worker's outbound fetches for URL imports, refusing what a stranger could aim them at: the
 * addresses and names `shared/net/addresses.ts` refuses (loopback, private, link-local and cloud
 * metadata, carrier-grade NAT, unique-local, internal names; the policy repository URLs share),
 * credentials in the URL, and any of these reached through a redirect: redirects are followed by
 * hand, each hop checked again.
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
export async function checkResolved(url: URL, budget: FetchBudget): Promise<string | null> {
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
