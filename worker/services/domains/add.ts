import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId, randomToken } from "../../../shared/ids";
import { MAX_POD_DOMAINS } from "../../../shared/protocol/domains";
import { type DomainRow, domains } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { domainsOfPod } from "./lookup";
import { normaliseDomain } from "./names";
import { type DomainView, toDomainView } from "./views";

const TAKEN = (domain: string) => `${domain} is already added to a pod`;

/**
 * `POST /api/pods/{name}/domains`: a `pending` domain with its verification record (a TXT record
 * `_podhost-verify.<domain>` whose value is a fresh random token) and a `domain_added` event; 201.
 * 400 for a name that is not a valid host name (names.ts), 409 when any pod, of any team, has it
 * (the unique index decides between two adds at once), 400 beyond MAX_POD_DOMAINS per pod.
 */
export async function addDomain({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; domain: string }>): Promise<Result<DomainView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const domain = normaliseDomain(input.domain, ctx.env.POD_DOMAIN);
  if (!domain.ok) return domain;
  const [taken] = await ctx.db
    .select({ id: domains.id })
    .from(domains)
    .where(eq(domains.domain, domain.value))
    .limit(1);
  if (taken) return fail("conflict", TAKEN(domain.value));
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
  };
  try {
    await ctx.db.batch([
      ctx.db.insert(domains).values(row),
      recordEventStatement(
        ctx.db,
        pod.id,
        "domain_added",
        `${row.domain} added to pod ${pod.name}, pending verification`,
        {
          domain: row.domain,
        },
      ),
    ]);
  } catch (error) {
    if (/UNIQUE constraint failed/i.test(String(error))) return fail("conflict", TAKEN(domain.value));
    throw error;
  }
  return ok(toDomainView(row, pod.name));
}
