import { eq } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceType } from "../../../shared/protocol/services";
import { podServices } from "../../db/schema";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { refuseWhileMoving } from "../pods/moving";
import { limitsOf } from "../pods/spec";
import { callTarget, targetOf } from "../pods/target";
import { findTeamService } from "./lookup";

/** the host stops the sidecar, removes it with its data, and gives the app its memory back */
const REMOVE_TIMEOUT_MS = 60_000;

/**
 * `DELETE /api/pods/{name}/services/{serviceType}`: the host removes the sidecar and its data
 * (`service.remove`, synchronous; the pod may be stopped), then the row goes, with a
 * `service_removed` event. An install still running is refused (409): its host command would race
 * the removal; the install ends within minutes either way.
 */
export async function removeService({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; serviceType: ServiceType }>): Promise<Result<{ status: "deleted" }>> {
  const found = await findTeamService(ctx.db, teamId, input.name, input.serviceType);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod, service } = found.value;
  if (service.status === "installing")
    return fail(
      "conflict",
      `the ${service.serviceType} service is still installing; delete it once it has ended`,
    );
  const plan = findPlan(pod.planSlug);
  if (!plan) return fail("internal", `pod ${pod.name} has an unknown plan`);
  const target = targetOf(found.value);
  if (!target.ok) return target;
  const removed = await callTarget(
    ctx,
    target.value,
    "service.remove",
    { name: pod.name, type: service.serviceType, limits: limitsOf(plan) },
    // a fresh key per request (callHost's): under a key per service, a removal failed once (the
    // agent's socket cut, the engine away) would answer every retry with that failure for the
    // journal's hour; removing a service already gone succeeds on the host
    { timeoutMs: REMOVE_TIMEOUT_MS },
  );
  if (!removed.ok) return removed;
  await ctx.db.batch([
    ctx.db.delete(podServices).where(eq(podServices.id, service.id)),
    recordEventStatement(
      ctx.db,
      pod.id,
      "service_removed",
      `${service.serviceType} removed from pod ${pod.name}, with its data`,
      { service_type: service.serviceType },
    ),
  ]);
  return ok({ status: "deleted" as const });
}
