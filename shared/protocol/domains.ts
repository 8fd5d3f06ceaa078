import { z } from "zod";
import { lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * Custom domains of pods (docs/domains.md). The Worker owns the records and their verification
 * (a TXT record looked up over DNS-over-HTTPS); a host only learns a pod's verified domains, which
 * its ingress serves from the pod's vhost beside `{name}.{POD_DOMAIN}`. The host keeps the list in
 * its state dir, so a restart, stop/start or redeploy of the pod keeps serving them.
 * Spread into `ops` in ./ops.ts like ./services.ts.
 */

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
/**
 * A custom host name: lowercase, at least two labels of 1–63 `[a-z0-9-]` that neither start nor end
 * with `-`, at most 253 characters, and a last label with a letter (so no IPv4 literal; an IPv6 one
 * has `:`). Nothing else: no wildcard, no trailing dot, no space, `;`, `{` or newline.
 */
const CUSTOM_DOMAIN = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*\\.(?=[a-z0-9-]*[a-z])${LABEL}$`);

export function isCustomDomain(domain: string): boolean {
  return CUSTOM_DOMAIN.test(domain);
}

export const CustomDomain = lazy(() => z.string().max(253).refine(isCustomDomain, "not a valid host name"));

/** at most this many custom domains per pod */
export const MAX_POD_DOMAINS = 20;

export const domainsOps = {
  /**
   * the pod's custom domains are exactly `domains`: the host remembers them and re-renders the
   * pod's vhost (when it has one) with them beside its own; `[]` removes them all. Idempotent.
   */
  "pod.domains.set": () => ({
    params: z.object({ name: PodName, domains: z.array(CustomDomain()).max(MAX_POD_DOMAINS) }),
    result: z.object({ domains: z.array(z.string()) }),
  }),
};
