import { eq } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import { ok, type Result } from "../../../shared/errors";
import { pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { callHost } from "../hosts/host-client";
import { releaseCapacity } from "../hosts/hosts";
import { recordEventStatement } from "./events";
import { findTeamPod } from "./lookup";
import { planResources } from "./placement";
import { hostFailure } from "./power";

const DELETE_TIMEOUT_MS = 60_000;

/**
 * Removes the pod's containers, volumes and network on its host, then marks it `deleted` (the row
 * stays: the name is reserved for 7 days) and gives its room and SSH port back.
 */
export async function deletePod({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<void>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const { pod } = found.value;
  if (pod.hostId) {
    const removed = await callHost(
      ctx.env,
      pod.hostId,
      "pod.delete",
      { name },
      {
        timeoutMs: DELETE_TIMEOUT_MS,
        idempotencyKey: `pod.delete:${pod.id}`,
      },
    );
    if (!removed.ok) return hostFailure(removed, name);
  }
  const now = nowIso();
  const plan = findPlan(pod.planSlug);
  await ctx.db.batch([
    ctx.db
      .update(pods)
      .set({ status: "deleted", deletedAt: now, sshPort: null, ip: null, updatedAt: now })
      .where(eq(pods.id, pod.id)),
    recordEventStatement(ctx.db, pod.id, "deleted", `pod ${name} deleted; the name is reserved for 7 days`),
    ...(pod.hostId && plan ? [releaseCapacity(ctx.db, pod.hostId, planResources(plan))] : []),
  ]);
  return ok(undefined);
}
