import { and, count, desc, eq } from "drizzle-orm";
import { ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { podEvents } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { TeamCall } from "../context";
import { findTeamPod } from "./lookup";

/** Every event type a pod records, in the order they were introduced (the events tab filters by them). */
export const POD_EVENT_TYPES = [
  "created",
  "started",
  "stopped",
  "restarted",
  "resized",
  "suspended",
  "reloaded",
  "deleted",
  "error",
  "progress",
  "ssh_key_added",
  "ssh_key_removed",
  "env_updated",
  "zip_uploaded",
  "imported",
  "health_diagnosis",
  "health_recovered",
  "health_fixed",
  "git_connected",
  "git_disconnected",
  "deployment",
  "deploy_failed",
  "restore_started",
  "restore_completed",
  "restore_failed",
  "service_install",
  "service_running",
  "service_removed",
  "domain_added",
  "domain_verified",
  "domain_removed",
  "domain_claim_dropped",
  "domain_released",
  "feedback_updated",
  "agent_install",
  "agent_installed",
  "agent_install_failed",
  "agent_removed",
  "domain_tls",
  "moved",
  "move_failed",
] as const;

export type PodEventType = (typeof POD_EVENT_TYPES)[number];

export const recordEventStatement = (
  db: Db,
  podId: string,
  type: PodEventType,
  message: string,
  metadata?: Record<string, unknown>,
) =>
  db.insert(podEvents).values({
    id: newId("evt"),
    podId,
    type,
    message,
    metadata: metadata && Object.keys(metadata).length > 0 ? JSON.stringify(metadata) : null,
    createdAt: nowIso(),
  });

export interface EventView {
  id: string;
  type: string;
  message: string;
  metadata?: string;
  created_at: string;
}

export interface EventsPage {
  events: EventView[];
  total: number;
  limit: number;
  offset: number;
}

/** The team's pod's events, newest first; `metadata` is omitted when empty (contract). */
export async function listPodEvents({
  ctx,
  teamId,
  input: q,
}: TeamCall<{ name: string; limit: number; offset: number; type?: string }>): Promise<Result<EventsPage>> {
  const found = await findTeamPod(ctx.db, teamId, q.name);
  if (!found.ok) return found;
  const { db } = ctx;
  const podId = found.value.pod.id;
  const where = and(eq(podEvents.podId, podId), q.type ? eq(podEvents.type, q.type) : undefined);
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(podEvents)
      .where(where)
      .orderBy(desc(podEvents.createdAt), desc(podEvents.id))
      .limit(q.limit)
      .offset(q.offset),
    db.select({ n: count() }).from(podEvents).where(where),
  ]);
  const events: EventView[] = rows.map((e) => ({
    id: e.id,
    type: e.type,
    message: e.message,
    ...(e.metadata ? { metadata: e.metadata } : {}),
    created_at: e.createdAt,
  }));
  return ok({ events, total: totals[0]?.n ?? 0, limit: q.limit, offset: q.offset });
}
