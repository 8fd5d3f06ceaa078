import { and, eq, inArray } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { ALERT_EVENTS, type AlertEvent, alertRules, pods } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { findTeamPod } from "../pods/lookup";
import { requireOwner } from "../teams/access";
import { isTeamEvent } from "./events";

/**
 * Which events alert (docs/alerts.md): each is on unless switched off, for the team (`scope` '') or
 * for one pod (its id), the pod's rule winning over the team's.
 */

export async function eventEnabled(
  db: Db,
  teamId: string,
  podId: string,
  event: AlertEvent,
): Promise<boolean> {
  const rules = await db
    .select({ scope: alertRules.scope, enabled: alertRules.enabled })
    .from(alertRules)
    .where(
      and(eq(alertRules.teamId, teamId), eq(alertRules.event, event), inArray(alertRules.scope, ["", podId])),
    );
  const pod = rules.find((r) => r.scope === podId);
  const team = rules.find((r) => r.scope === "");
  return (pod ?? team)?.enabled ?? true;
}

export interface AlertEventsView {
  events: { event: AlertEvent; enabled: boolean }[];
  pods: { pod: string; event: AlertEvent; enabled: boolean }[];
}

async function eventsView(db: Db, teamId: string): Promise<AlertEventsView> {
  const rows = await db
    .select({ scope: alertRules.scope, event: alertRules.event, enabled: alertRules.enabled, pod: pods.name })
    .from(alertRules)
    .leftJoin(pods, eq(pods.id, alertRules.scope))
    .where(eq(alertRules.teamId, teamId));
  const known = (e: string): e is AlertEvent => (ALERT_EVENTS as readonly string[]).includes(e);
  return {
    events: ALERT_EVENTS.map((event) => ({
      event,
      enabled: rows.find((r) => r.scope === "" && r.event === event)?.enabled ?? true,
    })),
    pods: rows
      .filter((r) => r.scope !== "" && r.pod !== null && known(r.event))
      .map((r) => ({ pod: r.pod ?? "", event: r.event as AlertEvent, enabled: r.enabled }))
      .sort((a, b) => a.pod.localeCompare(b.pod) || a.event.localeCompare(b.event)),
  };
}

export async function listAlertEvents(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
): Promise<Result<AlertEventsView>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  return ok(await eventsView(ctx.db, teamId));
}

/** Switches an event on or off for the team, or for one of its pods (`pod`: its name). */
export async function setAlertEvent(
  ctx: ServiceContext,
  userId: string,
  teamId: string,
  input: { event: AlertEvent; enabled: boolean; pod?: string },
): Promise<Result<AlertEventsView>> {
  const access = await requireOwner(ctx.db, teamId, userId);
  if (!access.ok) return access;
  let scope = "";
  if (input.pod !== undefined) {
    if (isTeamEvent(input.event))
      return fail("bad_request", `pod: ${input.event} is the team's event; switch it for the team`);
    const found = await findTeamPod(ctx.db, teamId, input.pod);
    if (!found.ok) return fail("bad_request", `pod: ${found.message}`);
    scope = found.value.pod.id;
  }
  await ctx.db
    .insert(alertRules)
    .values({ teamId, scope, event: input.event, enabled: input.enabled, updatedAt: nowIso() })
    .onConflictDoUpdate({
      target: [alertRules.teamId, alertRules.scope, alertRules.event],
      set: { enabled: input.enabled, updatedAt: nowIso() },
    });
  return ok(await eventsView(ctx.db, teamId));
}
