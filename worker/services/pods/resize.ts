import { dailyPrice, findPlan } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import type { PodResizeRow } from "../../db/schema";
import { billingAdmission } from "../billing/admission";
import type { ServiceContext, TeamCall } from "../context";
import { isAlive } from "../hosts/hosts";
import { resolvePlan } from "./admission";
import { viewOf } from "./power";
import {
  claimResize,
  finishResize,
  giveBackResize,
  pendingResize,
  RESIZE_CALL_TIMEOUT_MS,
  releaseHold,
  settleResize,
} from "./resize-reservation";
import { limitsOf } from "./spec";
import { callTarget, podTarget } from "./target";
import type { PodView } from "./view";

/**
 * New plan limits on the running container; the host must have room for the difference (409), and
 * a larger plan needs a payable team (402, services/billing/admission.ts). The room is held in a
 * `pod_resizes` row from before the host is asked until the plan is recorded, so a request cut in
 * between gives it back later instead of keeping it (./resize-reservation.ts).
 */
export async function resizePod(
  call: TeamCall<{ name: string; plan_slug: string }>,
): Promise<Result<PodView>> {
  return resizeOnce(call, { settledEarlier: false });
}

async function resizeOnce(
  { ctx, teamId, input: { name, plan_slug } }: TeamCall<{ name: string; plan_slug: string }>,
  { settledEarlier }: { settledEarlier: boolean },
): Promise<Result<PodView>> {
  const plan = resolvePlan(plan_slug);
  if (!plan.ok) return plan;
  const target = await podTarget(ctx, teamId, name);
  if (!target.ok) return target;
  const { pod } = target.value.found;
  const { hostId } = target.value;
  const current = findPlan(pod.planSlug);
  if (!current || current.slug === plan.value.slug) {
    // asked for the plan it has: an earlier attempt left to settle is undone now, not within the hour
    const earlier = settledEarlier ? undefined : await pendingResize(ctx.db, pod.id);
    if (earlier && Date.parse(earlier.settleAfter) <= Date.now()) {
      const settled = await settleEarlier(ctx, name, earlier);
      if (!settled.ok) return settled;
    }
    return viewOf(ctx, pod.id);
  }
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

  // A host known to be away is not asked (nor its room held until someone settles the attempt).
  const { host } = target.value.found;
  if (host && !isAlive(host)) return fail("unavailable", `server ${host.name} is offline; try again shortly`);

  const claim = await claimResize(ctx.db, { podId: pod.id, hostId, from: current, to: plan.value });
  if (!claim.claimed) {
    if ("why" in claim) return fail("conflict", refusal(claim.why, name, plan.value.slug));
    // An earlier resize of the pod did not finish: undone first, once its request is surely over.
    if (settledEarlier || Date.parse(claim.earlier.settleAfter) > Date.now()) {
      return fail(
        "conflict",
        `a resize of pod ${name} to ${claim.earlier.toPlan} is under way; try again in a minute`,
      );
    }
    const settled = await settleEarlier(ctx, name, claim.earlier);
    if (!settled.ok) return settled;
    return resizeOnce({ ctx, teamId, input: { name, plan_slug } }, { settledEarlier: true });
  }

  const result = await callTarget(
    ctx,
    target.value,
    "pod.resize",
    { name, limits: limitsOf(plan.value) },
    { timeoutMs: RESIZE_CALL_TIMEOUT_MS },
  );
  if (!result.ok) {
    if (result.code === "unavailable") {
      // Sent or not, applied or not: unknown. The row stays for whoever settles it next.
      await releaseHold(ctx.db, claim.token);
    } else {
      await giveBackResize(ctx.db, claim.token);
    }
    return result;
  }
  const finished = await finishResize(ctx.db, {
    token: claim.token,
    podId: pod.id,
    hostId,
    from: current,
    to: plan.value,
  });
  if (!finished) {
    // Settled by someone else, or the pod was moved or deleted meanwhile: the record stands.
    const row = await pendingResize(ctx.db, pod.id);
    if (row?.token === claim.token) await settleResize(ctx.env, ctx.db, row);
    return fail(
      "conflict",
      `pod ${name} changed while it was being resized; nothing was recorded: ask again`,
    );
  }
  return viewOf(ctx, pod.id);
}

/** An earlier attempt past its hold, undone (./resize-reservation.ts `settleResize`). */
async function settleEarlier(
  ctx: ServiceContext,
  name: string,
  earlier: PodResizeRow,
): Promise<Result<null>> {
  const settled = await settleResize(ctx.env, ctx.db, earlier);
  if (settled.ok) return ok(null);
  return fail(
    settled.code,
    `pod ${name}'s earlier resize did not finish and its server cannot undo it now: ${settled.message}`,
  );
}

function refusal(why: "moving" | "no_room" | "changed", name: string, plan: string): string {
  if (why === "moving")
    return `pod ${name} is being moved to another server; resize it once the move has ended`;
  if (why === "no_room") return `the pod's server has no room for the ${plan} plan`;
  return `pod ${name} changed while it was being resized; ask again`;
}
