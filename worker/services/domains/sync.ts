import type { Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import type { PodWithHost } from "../pods/lookup";
import { callTarget, targetOf } from "../pods/target";

/**
 * Tell the pod's host which custom domains its vhost serves (`pod.domains.set`, the whole list):
 * after a verification and after a verified domain's removal. The host keeps the list, so a pod
 * that is stopped serves them from its next start.
 */
export async function setHostDomains(
  ctx: ServiceContext,
  found: PodWithHost,
  verified: string[],
): Promise<Result<unknown>> {
  const target = targetOf(found);
  if (!target.ok) return target;
  return callTarget(ctx, target.value, "pod.domains.set", { name: found.pod.name, domains: verified });
}
