import { fail, ok, type Result } from "../../../shared/errors";
import { isCustomDomain } from "../../../shared/protocol/domains";

/** The TXT record's name that proves control of `domain`. */
export const VERIFY_LABEL = "_podhost-verify";
export const verificationName = (domain: string) => `${VERIFY_LABEL}.${domain}`;

/**
 * A custom domain as the caller typed it, made canonical and checked (docs/domains.md): surrounding
 * space and one trailing dot go and letters are lowercased (host names are case-insensitive); then
 * it must be a host name of at least two labels (shared/protocol/domains.ts), not an IP literal and
 * not the service's own POD_DOMAIN or a name under it (those are the pods' own addresses).
 */
export function normaliseDomain(raw: string, podDomain: string): Result<string> {
  const domain = raw.trim().replace(/\.$/, "").toLowerCase();
  const shown = JSON.stringify(raw.slice(0, 300));
  if (!isCustomDomain(domain))
    return fail(
      "bad_request",
      `invalid host name ${shown}: use labels of letters, digits and '-' (1–63 each, at least two, 253 in all), not an IP address`,
    );
  const own = podDomain.toLowerCase();
  if (domain === own || domain.endsWith(`.${own}`))
    return fail(
      "bad_request",
      `${domain} is under ${own}, the service's own domain; the pod already answers there`,
    );
  return ok(domain);
}
