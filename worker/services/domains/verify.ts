import { and, eq, inArray, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { domains } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext, TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { refuseWhileMoving } from "../pods/moving";
import { isUniqueViolation } from "../teams/slug";
import { lookupTxt } from "./dns";
import { findTeamDomain } from "./lookup";
import { verificationName } from "./names";
import { pushVerifiedDomains } from "./sync";
import { FAILED, refreshDomainTls, registerDomainTls, restartDomainTls } from "./tls";
import { type DomainView, toDomainView } from "./views";

const MAX_SHOWN = 5;

const OWNED_ELSEWHERE = (domain: string) =>
  `${domain} was verified by another pod first; remove this claim (the name is not served here)`;

/**
 * `POST /api/pods/{name}/domains/{id}/verify`: look up `_podhost-verify.<domain>` TXT over
 * DNS-over-HTTPS (dns.ts). When one of its strings is this claim's token, the claim becomes
 * `verified` — unless another pod's claim of the name got there first (409; the partial unique
 * index decides between two at once) — the pod's host is told to serve it (sync.ts; a host failure
 * puts it back to `pending`), a `domain_verified` event is recorded, and every other pod's pending
 * claim of the name is dropped with a `domain_claim_dropped` event on that pod. No match: 400 saying
 * what was found. A verified domain verifies again as a no-op (200) for the name itself; its
 * certificate's state is looked at again, and a failed validation restarted.
 */
export async function verifyDomain({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<DomainView>> {
  const found = await findTeamDomain(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod, domain } = found.value;
  // verified already: its certificate's state is looked at again (until it is active), and a
  // failed validation is restarted (tls.ts restartDomainTls)
  if (domain.status === "verified") {
    if (domain.tlsStatus?.startsWith(FAILED)) {
      const restarted = await restartDomainTls(ctx, domain);
      if (!restarted.ok) return restarted;
      return ok(toDomainView({ ...domain, tlsStatus: restarted.value }, pod.name));
    }
    const tlsStatus = domain.tlsStatus === "active" ? domain.tlsStatus : await refreshDomainTls(ctx, domain);
    return ok(toDomainView({ ...domain, tlsStatus }, pod.name));
  }
  if (await verifiedElsewhere(ctx, domain.domain)) return fail("conflict", OWNED_ELSEWHERE(domain.domain));
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
  try {
    const [claimed] = await ctx.db
      .update(domains)
      .set({ status: "verified", verifiedAt, checkedAt: verifiedAt, missingSince: null })
      .where(and(eq(domains.id, domain.id), eq(domains.status, "pending")))
      .returning({ id: domains.id });
    // dropped meanwhile: another pod's verification of the name got there first
    if (!claimed) return fail("conflict", OWNED_ELSEWHERE(domain.domain));
  } catch (error) {
    if (isUniqueViolation(error, "domains.domain")) return fail("conflict", OWNED_ELSEWHERE(domain.domain));
    throw error;
  }
  const told = await pushVerifiedDomains(ctx, found.value);
  if (!told.ok) {
    await ctx.db
      .update(domains)
      .set({ status: "pending", verifiedAt: null, checkedAt: null })
      .where(and(eq(domains.id, domain.id), eq(domains.status, "verified")));
    return told;
  }
  await ctx.db.batch([
    recordEventStatement(
      ctx.db,
      pod.id,
      "domain_verified",
      `${domain.domain} verified; pod ${pod.name} answers there`,
      { domain: domain.domain },
    ),
    ...(await dropOtherClaims(ctx, domain.domain, domain.id)),
  ]);
  const row = { ...domain, status: "verified" as const, verifiedAt, checkedAt: verifiedAt };
  // the edge's certificate for the name (tls.ts): registered with Cloudflare for SaaS now
  const tlsStatus = await registerDomainTls(ctx, row);
  return ok(toDomainView({ ...row, tlsStatus }, pod.name));
}

async function verifiedElsewhere(ctx: ServiceContext, domain: string): Promise<boolean> {
  const [row] = await ctx.db
    .select({ id: domains.id })
    .from(domains)
    .where(and(eq(domains.domain, domain), eq(domains.status, "verified")))
    .limit(1);
  return row !== undefined;
}

/**
 * The statements that drop the other pods' pending claims of `domain`, each with an event on its
 * pod. The event does not name the pod that verified it (it may be another team's).
 */
async function dropOtherClaims(ctx: ServiceContext, domain: string, ownerId: string) {
  const others = await ctx.db
    .select({ id: domains.id, podId: domains.podId })
    .from(domains)
    .where(and(eq(domains.domain, domain), ne(domains.id, ownerId), eq(domains.status, "pending")));
  if (others.length === 0) return [];
  return [
    ctx.db.delete(domains).where(
      and(
        inArray(
          domains.id,
          others.map((o) => o.id),
        ),
        eq(domains.status, "pending"),
      ),
    ),
    ...others.map((o) =>
      recordEventStatement(
        ctx.db,
        o.podId,
        "domain_claim_dropped",
        `${domain} was verified by another pod; this pod's pending claim of it was dropped`,
        { domain },
      ),
    ),
  ];
}
