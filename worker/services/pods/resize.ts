import { eq } from "drizzle-orm";
import { dailyPrice, findPlan } from "../../../shared/catalog";
import { fail, type Result } from "../../../shared/errors";
import { pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { billingAdmission } from "../billing/admission";
import type { TeamCall } from "../context";
import { reserveCapacity } from "../hosts/hosts";
import { resolvePlan } from "./admission";
import { recordEventStatement } from "./events";
import { viewOf } from "./power";
import { limitsOf } from "./spec";
import { callTarget, podTarget } from "./target";
import type { PodView } from "./view";

/**
 * New plan limits on the running container; the host must have room for the difference (409), and
 * a larger plan needs a payable team (402, services/billing/admission.ts).
 */
export async function resizePod({
  ctx,
  teamId,
  input: { name, plan_slug },
}: TeamCall<{ name: string; plan_slug: string }>): Promise<Result<PodView>> {
  const plan = resolvePlan(plan_slug);
  if (!plan.ok) return plan;
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const { pod } = target.value.found;
  const { hostId } = target.value;
  const current = findPlan(pod.planSlug);
  if (!current || current.slug === plan.value.slug) return viewOf(ctx, pod.id);
  // A larger plan costs more a day: only a payable team moves up (402). Down is always allowed.
  if (dailyPrice(plan.value) > dailyPrice(current)) {
    const payable = await billingAdmission(
      ctx,
      teamId,
      "resizing to a larger plan",
      dailyPrice(plan.value) - dailyPrice(current),
    );
    if (!payable.ok) return payable;
  }

  const delta = {
    cpu: plan.value.cpu - current.cpu,
    memoryMb: plan.value.memoryMb - current.memoryMb,
    diskGb: plan.value.diskGb - current.diskGb,
  };
  if (!(await reserveCapacity(ctx.db, hostId, delta))) {
    return fail("conflict", `the pod's server has no room for the ${plan.value.slug} plan`);
  }
  const result = await callTarget(ctx, target.value, "pod.resize", { name, limits: limitsOf(plan.value) });
  if (!result.ok) {
    await reserveCapacity(ctx.db, hostId, {
      cpu: -delta.cpu,
      memoryMb: -delta.memoryMb,
      diskGb: -delta.diskGb,
    });
    return result;
  }
  await ctx.db.batch([
    ctx.db.update(pods).set({ planSlug: plan.value.slug, updatedAt: nowIso() }).where(eq(pods.id, pod.id)),
    recordEventStatement(
      ctx.db,
      pod.id,
      "resized",
      `plan changed from ${current.slug} to ${plan.value.slug}`,
      {
        from: current.slug,
        to: plan.value.slug,
      },
    ),
  ]);
  return viewOf(ctx, pod.id);
}
