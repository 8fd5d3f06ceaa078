import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import { MAX_POD_DOMAINS } from "../../../shared/protocol/domains";
import { type DomainRow, domains } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { isUniqueViolation } from "../teams/slug";
import { domainsOfPod } from "./lookup";
import { normaliseDomain } from "./names";
import { type DomainView, toDomainView } from "./views";

const TAKEN = (domain: string) => `${domain} is already verified by a pod`;
const ALREADY = (domain: string, pod: string) => `${domain} is already added to pod ${pod}`;

/**
 * `POST /api/pods/{name}/domains`: a `pending` claim of the name with its verification record (a
 * TXT record `_podhost-verify.<domain>` whose value is a fresh random token, this claim's own) and a
 * `domain_added` event; 201. A pending claim holds nothing: any pod, of any team, may claim the same
 * name, and the first to verify owns it (verify.ts). 409 when a pod has verified the name, or when
 * this pod has claimed it already (a unique index decides between two adds at once); 400 for a name
 * that is not a valid host name (names.ts) and beyond MAX_POD_DOMAINS per pod.
 */
export async function addDomain({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; domain: string }>): Promise<Result<DomainView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  const domain = normaliseDomain(input.domain, ctx.env.POD_DOMAIN);
  if (!domain.ok) return domain;
  const claims = await ctx.db
    .select({ podId: domains.podId, status: domains.status })
    .from(domains)
    .where(eq(domains.domain, domain.value));
  if (claims.some((c) => c.status === "verified")) return fail("conflict", TAKEN(domain.value));
  if (claims.some((c) => c.podId === pod.id)) return fail("conflict", ALREADY(domain.value, pod.name));
  if ((await domainsOfPod(ctx.db, pod.id)).length >= MAX_POD_DOMAINS)
    return fail(
      "bad_request",
      `pod ${pod.name} already has ${MAX_POD_DOMAINS} domains, the most a pod may have`,
    );
  const row: DomainRow = {
    id: newId("dom"),
    podId: pod.id,
    domain: domain.value,
    status: "pending",
    verificationToken: `podhost-verify=${randomToken(32)}`,
    createdAt: nowIso(),
    verifiedAt: null,
    checkedAt: null,
    missingSince: null,
    tlsStatus: null,
    tlsHostnameId: null,
    tlsCheckedAt: null,
  };
  try {
    await ctx.db.batch([
      ctx.db.insert(domains).values(row),
      recordEventStatement(
        ctx.db,
        pod.id,
        "domain_added",
        `${row.domain} added to pod ${pod.name}, pending verification`,
        { domain: row.domain },
      ),
    ]);
  } catch (error) {
    if (isUniqueViolation(error, "domains.domain")) return fail("conflict", ALREADY(domain.value, pod.name));
    throw error;
  }
  return ok(toDomainView(row, pod.name));
}
