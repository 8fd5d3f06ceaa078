import { eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { domains } from "../../db/schema";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { refuseWhileMoving } from "../pods/moving";
import { findTeamDomain } from "./lookup";
import { pushVerifiedDomains } from "./sync";
import { hostnameRemovalStatements } from "./tls";

/**
 * `DELETE /api/pods/{name}/domains/{id}`: a verified domain is first taken off the pod's vhost
 * (the host gets the remaining list) and its custom hostname deleted at Cloudflare (queued for the
 * cron when Cloudflare fails: tls.ts), then the row goes with a `domain_removed` event; the name is
 * free for any pod again.
 */
export async function removeDomain({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; id: string }>): Promise<Result<{ status: "deleted" }>> {
  const found = await findTeamDomain(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod, domain } = found.value;
  if (domain.status === "verified") {
    const told = await pushVerifiedDomains(ctx, found.value, domain.id);
    if (!told.ok) return told;
  }
  const tlsCleanup = await hostnameRemovalStatements(ctx, [domain]);
  await ctx.db.batch([
    ctx.db.delete(domains).where(eq(domains.id, domain.id)),
    ...tlsCleanup,
    recordEventStatement(ctx.db, pod.id, "domain_removed", `${domain.domain} removed from pod ${pod.name}`, {
      domain: domain.domain,
    }),
  ]);
  return ok({ status: "deleted" as const });
}
