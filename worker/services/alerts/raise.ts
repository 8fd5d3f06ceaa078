import { and, eq, isNull } from "drizzle-orm";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import {
  type AlertEvent,
  alertChannels,
  alertDeliveries,
  alertIncidents,
  pods,
  teams,
} from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { eventEnabled } from "./rules";

/**
 * Raising and clearing alerts (docs/alerts.md). An event opens an incident keyed by (event, pod): the
 * partial unique index on open incidents makes a second failure while one is open a no-op, so each
 * incident reaches the channels once, and once more as `resolved` when it clears. Each channel gets a
 * delivery row and an alert-deliver Workflow that sends it with retries. Raising never throws: the
 * work that failed (a deploy, a backup) is recorded whatever becomes of its alert.
 */

export type AlertState = "firing" | "resolved" | "test";

export interface AlertPayload {
  /** the delivery's id; receivers drop one they have seen (replays) */
  id: string;
  type: `alert.${AlertState}`;
  event: AlertEvent | "test";
  team: { id: string; name: string };
  pod: { id: string; name: string } | null;
  summary: string;
  incident: { id: string; opened_at: string; resolved_at: string | null } | null;
  /** the dashboard's page for it */
  url: string;
  created_at: string;
}

const SUMMARY_MAX = 500;
const bounded = (text: string) => (text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX - 1)}…` : text);

const dashboard = (env: Bindings, path: string) => `${env.PUBLIC_URL.replace(/\/+$/, "")}${path}`;

export function testPayload(
  env: Bindings,
  deliveryId: string,
  team: { id: string; name: string },
): AlertPayload {
  return {
    id: deliveryId,
    type: "alert.test",
    event: "test",
    team: { id: team.id, name: team.name },
    pod: null,
    summary: "A test alert: this channel works.",
    incident: null,
    url: dashboard(env, "/app/team"),
    created_at: nowIso(),
  };
}

/** Starts the delivery's Workflow; a failure to start is logged (the row stays `pending`). */
export async function dispatchDelivery(env: Bindings, deliveryId: string): Promise<void> {
  try {
    await env.ALERT_DELIVER.create({ id: deliveryId, params: { deliveryId } });
  } catch (error) {
    console.error(
      JSON.stringify({ msg: "alert-deliver workflow not started", deliveryId, error: String(error) }),
    );
  }
}

interface Facts {
  pod: { id: string; name: string } | null;
  team: { id: string; name: string };
}

async function podFacts(db: Db, podId: string): Promise<Facts | null> {
  const [row] = await db
    .select({ podId: pods.id, podName: pods.name, teamId: teams.id, teamName: teams.name })
    .from(pods)
    .innerJoin(teams, eq(teams.id, pods.teamId))
    .where(eq(pods.id, podId));
  return row
    ? { pod: { id: row.podId, name: row.podName }, team: { id: row.teamId, name: row.teamName } }
    : null;
}

async function teamFacts(db: Db, teamId: string): Promise<Facts | null> {
  const [row] = await db.select({ id: teams.id, name: teams.name }).from(teams).where(eq(teams.id, teamId));
  return row ? { pod: null, team: row } : null;
}

const incidentKey = (event: AlertEvent, podId: string) => `${event}:${podId}`;
/** a team's incident: `<event>:<team id>`, or `<event>:<team id>:<scope>` (host_lost: one per host) */
const teamIncidentKey = (event: AlertEvent, teamId: string, scope: string) =>
  scope ? `${event}:${teamId}:${scope}` : `${event}:${teamId}`;

async function fanOut(
  env: Bindings,
  db: Db,
  facts: Facts,
  event: AlertEvent,
  state: "firing" | "resolved",
  incident: { id: string; openedAt: string; resolvedAt: string | null },
  summary: string,
  path: string,
): Promise<void> {
  const channels = await db
    .select({ id: alertChannels.id })
    .from(alertChannels)
    .where(and(eq(alertChannels.teamId, facts.team.id), eq(alertChannels.enabled, true)));
  if (channels.length === 0) return;
  const now = nowIso();
  const rows = channels.map((channel) => {
    const id = newId("ald");
    const payload: AlertPayload = {
      id,
      type: `alert.${state}`,
      event,
      team: facts.team,
      pod: facts.pod,
      summary,
      incident: { id: incident.id, opened_at: incident.openedAt, resolved_at: incident.resolvedAt },
      url: dashboard(env, path),
      created_at: now,
    };
    return {
      id,
      teamId: facts.team.id,
      channelId: channel.id,
      incidentId: incident.id,
      event,
      state,
      payload: JSON.stringify(payload),
      status: "pending" as const,
      attempts: 0,
      createdAt: now,
    };
  });
  const [head, ...rest] = rows.map((r) => db.insert(alertDeliveries).values(r));
  if (head) await db.batch([head, ...rest]);
  for (const r of rows) await dispatchDelivery(env, r.id);
}

const podPath = (facts: Facts) => (facts.pod ? `/app/pods/${encodeURIComponent(facts.pod.name)}` : "/app");

/** Opens the incident under `key` and alerts every enabled channel, unless one is open already. */
async function open(
  env: Bindings,
  db: Db,
  input: { event: AlertEvent; key: string; facts: Facts; summary: string; path: string },
): Promise<void> {
  const summary = bounded(input.summary);
  const [incident] = await db
    .insert(alertIncidents)
    .values({
      id: newId("ali"),
      teamId: input.facts.team.id,
      podId: input.facts.pod?.id ?? null,
      event: input.event,
      key: input.key,
      summary,
      openedAt: nowIso(),
    })
    .onConflictDoNothing()
    .returning();
  if (!incident) return; // open already: one alert per incident
  await fanOut(env, db, input.facts, input.event, "firing", incident, summary, input.path);
}

/** Closes the incident under `key` if one is open, and tells every enabled channel it cleared. */
async function close(
  env: Bindings,
  db: Db,
  input: {
    event: AlertEvent;
    key: string;
    facts: () => Promise<Facts | null>;
    summary: (f: Facts) => string;
  },
  path: (f: Facts) => string,
): Promise<void> {
  const [incident] = await db
    .update(alertIncidents)
    .set({ resolvedAt: nowIso() })
    .where(and(eq(alertIncidents.key, input.key), isNull(alertIncidents.resolvedAt)))
    .returning();
  if (!incident) return;
  const facts = await input.facts();
  if (!facts) return;
  await fanOut(env, db, facts, input.event, "resolved", incident, bounded(input.summary(facts)), path(facts));
}

const logFailure = (msg: string, input: Record<string, unknown>, error: unknown) =>
  console.error(JSON.stringify({ msg, ...input, error: String(error) }));

/** Opens the (event, pod) incident and alerts every enabled channel, unless it is open already. */
export async function raiseAlert(
  env: Bindings,
  db: Db,
  input: { event: AlertEvent; podId: string; summary: (podName: string) => string },
): Promise<void> {
  try {
    const facts = await podFacts(db, input.podId);
    if (!facts?.pod) return;
    if (!(await eventEnabled(db, facts.team.id, facts.pod.id, input.event))) return;
    await open(env, db, {
      event: input.event,
      key: incidentKey(input.event, facts.pod.id),
      facts,
      summary: input.summary(facts.pod.name),
      path: podPath(facts),
    });
  } catch (error) {
    logFailure("alert not raised", { event: input.event, podId: input.podId }, error);
  }
}

/** Closes the (event, pod) incident if one is open, and tells every enabled channel it cleared. */
export async function resolveAlert(
  env: Bindings,
  db: Db,
  input: { event: AlertEvent; podId: string; summary: (podName: string) => string },
): Promise<void> {
  try {
    await close(
      env,
      db,
      {
        event: input.event,
        key: incidentKey(input.event, input.podId),
        facts: () => podFacts(db, input.podId),
        summary: (f) => input.summary(f.pod?.name ?? ""),
      },
      podPath,
    );
  } catch (error) {
    logFailure("alert not resolved", { event: input.event, podId: input.podId }, error);
  }
}

export interface TeamAlertInput {
  event: AlertEvent;
  teamId: string;
  /** what tells two incidents of the event apart within the team ('' : one per team; host_lost: the host) */
  scope?: string;
  summary: (teamName: string) => string;
  /** the dashboard's page for it, e.g. `/app/billing` */
  path: string;
  /** the caller weighed the rules already (host_lost: each pod's rule, then the team's) */
  rulesChecked?: boolean;
}

/**
 * Opens a team's incident (billing events, a lost host): switched by the team's rule only (a
 * caller that concerns pods checks theirs first), with no pod in the payload.
 */
export async function raiseTeamAlert(env: Bindings, db: Db, input: TeamAlertInput): Promise<void> {
  try {
    const facts = await teamFacts(db, input.teamId);
    if (!facts) return;
    if (!input.rulesChecked && !(await eventEnabled(db, facts.team.id, "", input.event))) return;
    await open(env, db, {
      event: input.event,
      key: teamIncidentKey(input.event, input.teamId, input.scope ?? ""),
      facts,
      summary: input.summary(facts.team.name),
      path: input.path,
    });
  } catch (error) {
    logFailure("alert not raised", { event: input.event, teamId: input.teamId }, error);
  }
}

/** Closes a team's incident if one is open, and tells every enabled channel it cleared. */
export async function resolveTeamAlert(env: Bindings, db: Db, input: TeamAlertInput): Promise<void> {
  try {
    await close(
      env,
      db,
      {
        event: input.event,
        key: teamIncidentKey(input.event, input.teamId, input.scope ?? ""),
        facts: () => teamFacts(db, input.teamId),
        summary: (f) => input.summary(f.team.name),
      },
      () => input.path,
    );
  } catch (error) {
    logFailure("alert not resolved", { event: input.event, teamId: input.teamId }, error);
  }
}

/**
 * A deleted pod's open incidents close without a message (nothing is left to clear, and a later pod
 * is another pod): a statement for the deletion's batch.
 */
export const closePodIncidentsStatement = (db: Db, teamId: string, podId: string) =>
  db
    .update(alertIncidents)
    .set({ resolvedAt: nowIso() })
    .where(
      and(
        eq(alertIncidents.teamId, teamId),
        eq(alertIncidents.podId, podId),
        isNull(alertIncidents.resolvedAt),
      ),
    );
