import { eq, sql } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import { ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import {
  domains,
  feedback,
  feedbackSettings,
  type HostRow,
  podCodingAgents,
  podServices,
  pods,
} from "../../db/schema";
import { nowIso } from "../../lib/time";
import { closePodIncidentsStatement } from "../alerts/raise";
import { deletePodBackups } from "../backups/remove";
import type { TeamCall } from "../context";
import { domainsOfPod } from "../domains/lookup";
import { hostnameRemovalStatements } from "../domains/tls";
import { disconnectRepository } from "../git/config";
import { isAlive, releaseCapacity } from "../hosts/hosts";
import { recordEventStatement } from "./events";
import { findTeamPod } from "./lookup";
import { planResources } from "./placement";
import { giveBackResize, pendingResize } from "./resize-reservation";
import { callTarget } from "./target";

const DELETE_TIMEOUT_MS = 60_000;

/** The pod's host was declared lost (a `lost` move from it), and its agent is not back. */
async function leftOnLostHost(db: Db, podId: string, host: HostRow | null): Promise<boolean> {
  if (!host || isAlive(host)) return false;
  const lost = await db.get<{ n: number } | undefined>(
    sql`SELECT 1 AS n FROM pod_moves WHERE pod_id = ${podId} AND from_host_id = ${host.id} AND kind = 'lost' LIMIT 1`,
  );
  return Boolean(lost);
}

/**
 * Removes the pod's containers, volumes and network on its host (its database sidecars and their
 * data with them), disconnects its repository, deletes its backups (objects and rows), then drops
 * its service rows and marks it `deleted` (the row stays: the name is reserved for 7 days) and gives
 * its room and SSH port back.
 */
export async function deletePod({
  ctx,
  teamId,
  input: { name },
}: TeamCall<{ name: string }>): Promise<Result<void>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const { pod } = found.value;
  // A pod that never reached a host has nothing to remove there (not the usual 503 of podTarget).
  // Nor is a host declared lost asked while it stays away: the pod was left there for want of a
  // backup, and its owner may give it up; should the host come back, its reconciler removes the
  // container of a pod that is no longer live (docs/hosts.md "Lost").
  if (pod.hostId && !(await leftOnLostHost(ctx.db, pod.id, found.value.host))) {
    const removed = await callTarget(
      ctx,
      { found: found.value, hostId: pod.hostId },
      "pod.delete",
      { name },
      // A fresh key per request (callHost's): a delete the agent's socket cut is failed for good under
      // its key (docs/decisions/host-agent-journal.md), so a key per pod would answer every retry
      // with that failure for the journal's hour. Deleting a pod already gone succeeds on the host.
      { timeoutMs: DELETE_TIMEOUT_MS },
    );
    if (!removed.ok) return removed;
  }
  // A connected repository goes with the pod: its push hook is deleted at the git host and queued
  // deployments end, as on a disconnect (best effort there: the pod is gone either way).
  const git = await disconnectRepository({ ctx, teamId, input: { name } });
  if (!git.ok && git.code !== "not_found")
    console.warn(
      JSON.stringify({ msg: "repository not disconnected with its pod", podId: pod.id, error: git.message }),
    );
  // Its backups go too (docs/backups.md): the archives are the pod's data, reachable only through it.
  await deletePodBackups(ctx.env, ctx.db, pod.id);
  // Its custom domains' hostnames at Cloudflare go too; one Cloudflare fails to delete is queued
  // and retried by the cron (docs/domains.md, "TLS").
  const tlsCleanup = await hostnameRemovalStatements(ctx, await domainsOfPod(ctx.db, pod.id));
  const now = nowIso();
  const plan = findPlan(pod.planSlug);
  await ctx.db.batch([
    ctx.db.delete(podServices).where(eq(podServices.podId, pod.id)),
    ctx.db.delete(podCodingAgents).where(eq(podCodingAgents.podId, pod.id)),
    // its custom domains go too: the names are free for any pod again (docs/domains.md)
    ctx.db.delete(domains).where(eq(domains.podId, pod.id)),
    ...tlsCleanup,
    // its visitors' feedback and the token go too (docs/feedback.md)
    ctx.db.delete(feedback).where(eq(feedback.podId, pod.id)),
    ctx.db.delete(feedbackSettings).where(eq(feedbackSettings.podId, pod.id)),
    ctx.db
      .update(pods)
      .set({ status: "deleted", deletedAt: now, sshPort: null, ip: null, updatedAt: now })
      .where(eq(pods.id, pod.id)),
    recordEventStatement(ctx.db, pod.id, "deleted", `pod ${name} deleted; the name is reserved for 7 days`),
    closePodIncidentsStatement(ctx.db, teamId, pod.id),
    ...(pod.hostId && plan ? [releaseCapacity(ctx.db, pod.hostId, planResources(plan))] : []),
  ]);
  // a resize left to settle held room on the host for a container that is gone now
  const resizing = await pendingResize(ctx.db, pod.id);
  if (resizing) await giveBackResize(ctx.db, resizing.token);
  return ok(undefined);
}
