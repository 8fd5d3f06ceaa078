import { fail, type Result } from "../../../shared/errors";
import type { Bindings } from "../../env";
import { checkResolved, checkTarget, newBudget } from "../imports/fetch";

/**
 * Where a webhook or chat channel may point: the policy URL imports follow (shared/net/addresses.ts
 * through services/imports/fetch.ts): http(s) only, no credentials in the URL, no loopback, private,
 * link-local, metadata or internal address, nor a name any of whose A/AAAA records is one. Checked
 * when the channel is saved and again before every delivery (a name's records can change since).
 * `ALLOW_ALERT_LOOPBACK=true` (tests, local development) lets 127.0.0.0/8 through; nothing else opens.
 */
const LOOKUP_BUDGET_MS = 5_000;

export async function checkChannelUrl(env: Bindings, raw: string): Promise<Result<URL>> {
  const allowLoopback = env.ALLOW_ALERT_LOOPBACK === "true";
  if (raw.length > 2048) return fail("bad_request", "url: at most 2048 characters");
  const target = checkTarget(raw, allowLoopback, "url");
  if (!target.ok) return target;
  const budget = newBudget(
    { ALLOW_IMPORT_LOOPBACK: allowLoopback ? "true" : undefined, DNS_RESOLVER_URL: env.DNS_RESOLVER_URL },
    LOOKUP_BUDGET_MS,
  );
  const refused = await checkResolved(target.value, budget);
  return refused ? fail("bad_request", refused) : target;
}
