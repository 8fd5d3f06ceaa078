import { and, eq, isNull, ne, sql } from "drizzle-orm";
import { findPlan, type Plan, type PresetSlug } from "../../../shared/catalog";
import type { PodSpec } from "../../../shared/protocol";
import type { FeedbackVhost } from "../../../shared/protocol/feedback";
import type { Db } from "../../db/client";
import {
  backups,
  feedbackSettings,
  hosts as hostsTable,
  type MoveKind,
  podMoves,
  podServices,
  podSshKeys,
  pods,
} from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { domainsOfPod } from "../domains/lookup";
import { vhostOf, widgetScriptUrl } from "../feedback/configure";
import { recordEventStatement } from "../pods/events";
import { freeSshPort, planResources } from "../pods/placement";
import { podSpec } from "../pods/spec";
import { findHost, onlineHostsInRegion, releaseCapacity, reserveCapacity } from "./hosts";

/** The steps of a pod's move (worker/workflows/pod-move/); each reads or writes D1 once. */

type Preset = "static" | "php" | "nodejs" | "python";

export type MoveJob =
  | {
      kind: "run";
      moveId: string;
      move: MoveKind;
      podId: string;
      podName: string;
      preset: Preset;
      planSlug: string;
      region: string;
      /** the pod's status before the move: a stopped pod stays stopped, a suspended one suspended */
      wasRunning: boolean;
      suspended: boolean;
      fromHostId: string;
      fromHostName: string;
      fromSshPort: number | null;
      /** the database services to install on the new host, by type */
      services: { type: "mysql" | "postgresql" | "redis"; passwordEncrypted: string }[];
      /** a `lost` move's backup */
      backup: { id: string; bytes: number; sha256: string; createdAt: string } | null;
    }
  | { kind: "over" }
  | { kind: "fail"; podId: string; reason: string };

/** The move and the pod as they are now; a move no longer `moving`, or a deleted pod, is over. */
export async function loadMoveJob(db: Db, moveId: string): Promise<MoveJob> {
  const [row] = await db
    .select({ move: podMoves, pod: pods })
    .from(podMoves)
    .innerJoin(pods, eq(pods.id, podMoves.podId))
    .where(eq(podMoves.id, moveId));
  if (row?.move.status !== "moving") return { kind: "over" };
  const { move, pod } = row;
  const failed = (reason: string) => ({ kind: "fail" as const, podId: pod.id, reason });
  if (pod.status === "deleted") return failed(`pod ${pod.name} was deleted`);
  if (pod.hostId !== move.fromHostId)
    return failed(`pod ${pod.name} is no longer on the host it was to leave`);
  if (!findPlan(pod.planSlug)) return failed(`pod ${pod.name} has an unknown plan`);
  const from = await findHost(db, move.fromHostId);
  const services = await db
    .select({ type: podServices.serviceType, passwordEncrypted: podServices.passwordEncrypted })
    .from(podServices)
    .where(and(eq(podServices.podId, pod.id), ne(podServices.status, "error")));
  let backup: Extract<MoveJob, { kind: "run" }>["backup"] = null;
  if (move.kind === "lost") {
    const [b] = move.backupId ? await db.select().from(backups).where(eq(backups.id, move.backupId)) : [];
    if (b?.status !== "completed" || b.size === null || b.sha256 === null)
      return failed(`backup ${move.backupId ?? "(none)"} is no longer a completed backup`);
    backup = { id: b.id, bytes: b.size, sha256: b.sha256, createdAt: b.createdAt };
  }
  return {
    kind: "run",
    moveId: move.id,
    move: move.kind,
    podId: pod.id,
    podName: pod.name,
    preset: pod.preset as Preset,
    planSlug: pod.planSlug,
    region: pod.region,
    wasRunning: pod.status !== "stopped" && pod.status !== "suspended",
    suspended: pod.status === "suspended",
    fromHostId: move.fromHostId,
    fromHostName: from?.name ?? move.fromHostId,
    fromSshPort: pod.sshPort,
    services,
    backup,
  };
}

/** Which host a move empties, and how (for the next move and a lost host's alerts). */
export const moveOrigin = async (db: Db, moveId: string) =>
  (
    await db
      .select({ fromHostId: podMoves.fromHostId, kind: podMoves.kind })
      .from(podMoves)
      .where(eq(podMoves.id, moveId))
  )[0];

export type Placement =
  | { ok: true; hostId: string; hostName: string; sshPort: number }
  | { ok: false; reason: string };

const planOf = (slug: string): Plan => {
  const plan = findPlan(slug);
  if (!plan) throw new Error(`unknown plan ${slug}`);
  return plan;
};

/**
 * Another placeable host of the pod's region with room (the emptiest first), its plan's room taken
 * there and a free SSH port of its range chosen; recorded on the move. The port is taken for good by
 * the switch of the record (`switchPodHost`); should another pod take it meanwhile, the switch fails.
 */
export async function placeMove(db: Db, job: Extract<MoveJob, { kind: "run" }>): Promise<Placement> {
  const need = planResources(planOf(job.planSlug));
  for (const host of await onlineHostsInRegion(db, job.region)) {
    if (host.id === job.fromHostId) continue;
    if (!(await reserveCapacity(db, host.id, need))) continue;
    const port = await freeSshPort(db, host);
    if (port === null) {
      await releaseCapacity(db, host.id, need);
      continue;
    }
    await db.update(podMoves).set({ toHostId: host.id, sshPort: port }).where(eq(podMoves.id, job.moveId));
    return { ok: true, hostId: host.id, hostName: host.name, sshPort: port };
  }
  return { ok: false, reason: `no other server of region ${job.region} has room for a ${job.planSlug} pod` };
}

/** The pod as the new host makes it: the same id, name and plan, the new host's SSH port, its keys. */
export async function moveSpec(
  env: Bindings,
  db: Db,
  job: Extract<MoveJob, { kind: "run" }>,
  sshPort: number,
): Promise<PodSpec> {
  const keys = await db
    .select({ publicKey: podSshKeys.publicKey })
    .from(podSshKeys)
    .where(and(eq(podSshKeys.podId, job.podId), isNull(podSshKeys.removalRequestedAt)));
  return podSpec({
    podId: job.podId,
    name: job.podName,
    sshPort,
    preset: job.preset as PresetSlug,
    plan: planOf(job.planSlug),
    podDomain: env.POD_DOMAIN,
    authorizedKeys: keys.map((k) => k.publicKey),
  });
}

/**
 * The record follows the pod: its host, SSH port and address are the new host's, its room on the old
 * host given back, in one batch. Conditional on the pod still being on the old host (a replay after
 * the switch finds it moved and does nothing). False when it was not switched.
 */
export async function switchPodHost(
  db: Db,
  job: Extract<MoveJob, { kind: "run" }>,
  to: { hostId: string; hostName: string; sshPort: number; ip: string | null },
): Promise<boolean> {
  const [pod] = await db.select({ hostId: pods.hostId }).from(pods).where(eq(pods.id, job.podId));
  if (pod?.hostId === to.hostId) return true;
  const now = nowIso();
  const [switched] = await db.batch([
    db
      .update(pods)
      .set({
        hostId: to.hostId,
        sshPort: to.sshPort,
        ip: to.ip,
        status: job.wasRunning ? "running" : job.suspended ? "suspended" : "stopped",
        updatedAt: now,
      })
      .where(and(eq(pods.id, job.podId), eq(pods.hostId, job.fromHostId)))
      .returning({ id: pods.id }),
    releaseCapacity(db, job.fromHostId, planResources(planOf(job.planSlug))),
  ]);
  return switched.length === 1;
}

/**
 * A move that failed after the switch goes back: the record on the old host again (its port, its
 * room), the new host's room given back. Only for an evacuation, whose pod is still whole there.
 */
export async function switchBack(db: Db, job: Extract<MoveJob, { kind: "run" }>, toHostId: string) {
  const need = planResources(planOf(job.planSlug));
  await db.batch([
    db
      .update(pods)
      .set({ hostId: job.fromHostId, sshPort: job.fromSshPort, updatedAt: nowIso() })
      .where(and(eq(pods.id, job.podId), eq(pods.hostId, toHostId))),
    db
      .update(hostsTable)
      .set({
        allocatedCpu: sql`${hostsTable.allocatedCpu} + ${need.cpu}`,
        allocatedMemoryMb: sql`${hostsTable.allocatedMemoryMb} + ${need.memoryMb}`,
        allocatedDiskGb: sql`${hostsTable.allocatedDiskGb} + ${need.diskGb}`,
      })
      .where(eq(hostsTable.id, job.fromHostId)),
    releaseCapacity(db, toHostId, need),
  ]);
}

/** The room a move took on its new host, given back when it fails before the switch. */
export const releasePlacement = (db: Db, job: Extract<MoveJob, { kind: "run" }>, hostId: string) =>
  releaseCapacity(db, hostId, planResources(planOf(job.planSlug)));

/** What the pod's vhost serves beside its name: its verified custom domains and its feedback widget. */
export async function vhostExtras(
  env: Bindings,
  db: Db,
  podId: string,
): Promise<{ domains: string[]; feedback: FeedbackVhost | null }> {
  const domains = (await domainsOfPod(db, podId)).filter((d) => d.status === "verified").map((d) => d.domain);
  const [settings] = await db
    .select()
    .from(feedbackSettings)
    .where(eq(feedbackSettings.podId, podId))
    .limit(1);
  return { domains, feedback: settings ? vhostOf(settings, widgetScriptUrl(env.PUBLIC_URL)) : null };
}

/** The databases of an evacuated pod travel in a backup made for the move (`manual`, noted so). */
export const markMoveBackupRestored = (db: Db, backupId: string) => {
  const now = nowIso();
  return db
    .update(backups)
    .set({ status: "completed", verifiedAt: now, completedAt: now })
    .where(and(eq(backups.id, backupId), eq(backups.status, "in_progress")));
};

export async function endMove(
  db: Db,
  moveId: string,
  podId: string,
  outcome:
    | { ok: true; message: string; downtimeMs: number | null; metadata: Record<string, unknown> }
    | {
        ok: false;
        reason: string;
      },
) {
  const now = nowIso();
  await db.batch([
    db
      .update(podMoves)
      .set(
        outcome.ok
          ? { status: "done", downtimeMs: outcome.downtimeMs, endedAt: now }
          : { status: "error", reason: outcome.reason.slice(0, 2000), endedAt: now },
      )
      .where(and(eq(podMoves.id, moveId), eq(podMoves.status, "moving"))),
    outcome.ok
      ? recordEventStatement(db, podId, "moved", outcome.message, outcome.metadata)
      : recordEventStatement(db, podId, "move_failed", `the move failed: ${outcome.reason}`.slice(0, 2000)),
  ]);
}
