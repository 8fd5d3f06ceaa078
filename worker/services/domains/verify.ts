import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { domains } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { lookupTxt } from "./dns";
import { findTeamDomain } from "./lookup";
import { verificationName } from "./names";
import { pushVerifiedDomains } from "./sync";
import { type DomainView, toDomainView } from "./views";

const MAX_SHOWN = 5;

/**
 * `POST /api/pods/{name}/domains/{id}/verify`: look up `_podhost-verify.<domain>` TXT over
 * DNS-over-HTTPS (dns.ts). When one of its strings is the domain's token, the domain becomes
 * `verified`, the pod's host is told to serve it (sync.ts; a host failure puts it back to
 * `pending`) and a `domain_verified` event is recorded; else 400 saying what was found. A verified
 * domain verifies again as a no-op (200).
 */
export async function verifyDomain({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<DomainView>> {
  const found = await findTeamDomain(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  const { pod, domain } = found.value;
  if (domain.status === "verified") return ok(toDomainView(domain, pod.name));
  const name = verificationName(domain.domain);
  const txt = await lookupTxt(ctx.env, name);
  if (!txt.ok) return txt;
  if (!txt.value.includes(domain.verificationToken)) {
    const seen =
      txt.value.length === 0
        ? "found no TXT record"
        : `found ${txt.value
            .slice(0, MAX_SHOWN)
            .map((t) => JSON.stringify(t.slice(0, 200)))
            .join(", ")}${txt.value.length > MAX_SHOWN ? ` and ${txt.value.length - MAX_SHOWN} more` : ""}`;
    return fail(
      "bad_request",
      `${name}: ${seen}; expected a TXT record ${JSON.stringify(domain.verificationToken)}`,
    );
  }
  // verified in D1 first, so that the list the host gets has it (sync.ts); put back on a failure
  const verifiedAt = nowIso();
  await ctx.db.update(domains).set({ status: "verified", verifiedAt }).where(eq(domains.id, domain.id));
  const told = await pushVerifiedDomains(ctx, found.value);
  if (!told.ok) {
    await ctx.db
      .update(domains)
      .set({ status: "pending", verifiedAt: null })
      .where(eq(domains.id, domain.id));
    return told;
  }
  await recordEventStatement(
    ctx.db,
    pod.id,
    "domain_verified",
    `${domain.domain} verified; pod ${pod.name} answers there`,
    { domain: domain.domain },
  );
  return ok(toDomainView({ ...domain, status: "verified", verifiedAt }, pod.name));
}
