import { ok, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import type { PodWithHost } from "../pods/lookup";
import { callTarget, targetOf } from "../pods/target";
import { domainsOfPod } from "./lookup";

/** rounds of sending before the list is left to the next change (each round ends on a re-read) */
const MAX_ROUNDS = 3;

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * Tell the pod's host which custom domains its vhost serves (`pod.domains.set`, the whole list of
 * the pod's verified domains, less `exceptId` while that one is being removed): after a
 * verification and before a verified domain's removal. The host keeps the list, so a stopped pod
 * serves them from its next start.
 *
 * Two changes of one pod's domains at once could each send a list the other has already
 * outdated, and the host keeps the last one it gets: so after each send the list is read again,
 * and sent again until what the host got is what D1 says.
 */
export async function pushVerifiedDomains(
  ctx: ServiceContext,
  found: PodWithHost,
  exceptId?: string,
): Promise<Result<string[]>> {
  const target = targetOf(found);
  if (!target.ok) return target;
  const verified = async () =>
    (await domainsOfPod(ctx.db, found.pod.id))
      .filter((d) => d.status === "verified" && d.id !== exceptId)
      .map((d) => d.domain);
  let sent = await verified();
  for (let round = 1; ; round++) {
    const told = await callTarget(ctx, target.value, "pod.domains.set", {
      name: found.pod.name,
      domains: sent,
    });
    if (!told.ok) return told;
    const now = await verified();
    if (sameList(now, sent) || round >= MAX_ROUNDS) return ok(sent);
    sent = now;
  }
}
