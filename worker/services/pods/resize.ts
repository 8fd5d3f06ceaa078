import { eq } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import { fail, type Result } from "../../../shared/errors";
import { pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { callHost } from "../hosts/host-client";
import { reserveCapacity } from "../hosts/hosts";
import { resolvePlan } from "./admission";
import { recordEventStatement } from "./events";
import { findTeamPod } from "./lookup";
import { hostFailure, hostOf, viewOf } from "./power";
import { limitsOf } from "./spec";
import type { PodView } from "./view";

/** New plan limits on the running container; the host must have room for the difference (409). */
export async function resizePod({
  ctx,
  teamId,
  input: { name, plan_slug },
}: TeamCall<{ name: string; plan_slug: string }>): Promise<Result<PodView>> {
  const target = resolvePlan(plan_slug);
  if (!target.ok) return target;
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const { pod } = found.value;
  const hostId = hostOf(found.value);
  if (!hostId.ok) return hostId;
  const current = findPlan(pod.planSlug);
  if (!current || current.slug === target.value.slug) return viewOf(ctx, pod.id);

  const delta = {
    cpu: target.value.cpu - current.cpu,
    memoryMb: target.value.memoryMb - current.memoryMb,
    diskGb: target.value.diskGb - current.diskGb,
  };
  if (!(await reserveCapacity(ctx.db, hostId.value, delta))) {
    return fail("conflict", `the pod's server has no room for the ${target.value.slug} plan`);
  }
  const result = await callHost(ctx.env, hostId.value, "pod.resize", {
    name,
    limits: limitsOf(target.value),
  });
  if (!result.ok) {
    await reserveCapacity(ctx.db, hostId.value, {
      cpu: -delta.cpu,
      memoryMb: -delta.memoryMb,
      diskGb: -delta.diskGb,
    });
    return hostFailure(result, name);
  }
  await ctx.db.batch([
    ctx.db.update(pods).set({ planSlug: target.value.slug, updatedAt: nowIso() }).where(eq(pods.id, pod.id)),
    recordEventStatement(
      ctx.db,
      pod.id,
      "resized",
      `plan changed from ${current.slug} to ${target.value.slug}`,
      {
        from: current.slug,
        to: target.value.slug,
      },
    ),
  ]);
  return viewOf(ctx, pod.id);
}
