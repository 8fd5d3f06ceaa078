import { and, eq, gte, isNull, lt, ne } from "drizzle-orm";
import type { Db } from "../../db/client";
import { alertIncidents, hosts, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { parseDiagnosis } from "../health/report";
import type { DiskUse } from "../metrics/record";
import type { PodStatusChange } from "../pods/host-sync";
import { DISK_FIRE_RATIO, DISK_RESOLVE_RATIO } from "./events";
import { raiseAlert, raiseTeamAlert, resolveAlert, resolveTeamAlert } from "./raise";
import { eventEnabled } from "./rules";

/**
 * The alerts that follow what a host reports (docs/alerts.md), each called where the report is
 * turned into D1 state (the HostAgent object, the pod-create outcome), never from a scan:
 * - `pod_error`: a pod's status moved to `error`; resolved when it is `running` again;
 * - `app_unhealthy`: the app's diagnosis stayed for ALERT_UNHEALTHY_AFTER_S (the HostAgent's timer
 *   calls `alertOnLastingDiagnosis`); resolved when the diagnosis clears;
 * - `disk_full`: a metrics sample at ≥ 90 % of the plan's disk; resolved below 85 %;
 * - `host_lost`: the host's agent stayed disconnected for ALERT_HOST_LOST_AFTER_S (the HostAgent's
 *   timer); one incident per team with pods there, resolved when the agent says hello again.
 * None throws (raise.ts).
 */

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;
const minutes = (ms: number) =>
  ms >= 60_000 ? plural(Math.round(ms / 60_000), "minute") : plural(Math.round(ms / 1000), "second");

export async function alertOnPodStatus(env: Bindings, db: Db, changes: readonly PodStatusChange[]) {
  for (const change of changes) {
    if (change.status === "error") {
      await raiseAlert(env, db, {
        event: "pod_error",
        podId: change.podId,
        summary: (pod) => `${pod} is in error: ${change.reason ?? "reported by its host"}`,
      });
    } else if (change.status === "running") {
      await resolveAlert(env, db, {
        event: "pod_error",
        podId: change.podId,
        summary: (pod) => `${pod} is running again.`,
      });
    }
  }
}

/**
 * The HostAgent's timer for a diagnosis that appeared `afterMs` ago: still there (the pod running on
 * this host, its app still diagnosed), it alerts.
 */
export async function alertOnLastingDiagnosis(
  env: Bindings,
  db: Db,
  hostId: string,
  podId: string,
  afterMs: number,
) {
  const [pod] = await db
    .select({ stored: pods.appHealthDiagnosis })
    .from(pods)
    .where(and(eq(pods.id, podId), eq(pods.hostId, hostId), eq(pods.status, "running")));
  const diagnosis = parseDiagnosis(pod?.stored ?? null);
  if (!diagnosis) return;
  await raiseAlert(env, db, {
    event: "app_unhealthy",
    podId,
    summary: (name) =>
      `The app of ${name} has been unhealthy for ${minutes(afterMs)}: ${diagnosis.title}. ${diagnosis.fix}`,
  });
}

export async function resolveUnhealthy(env: Bindings, db: Db, podIds: readonly string[]) {
  for (const podId of podIds) {
    await resolveAlert(env, db, {
      event: "app_unhealthy",
      podId,
      summary: (pod) => `The app of ${pod} answers again.`,
    });
  }
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GB`;

/**
 * A host's metrics tick: pods at ≥ 90 % of their plan's disk open `disk_full`, pods below 85 % with an
 * incident open close it. One read of the open disk incidents (the partial index's range), so a tick
 * that changes nothing writes nothing.
 */
export async function alertOnDiskUse(env: Bindings, db: Db, usage: readonly DiskUse[]) {
  if (usage.length === 0) return;
  const open = await openIncidentsOf(db, "disk_full");
  const isOpen = new Set(open.map((o) => o.podId));
  for (const u of usage) {
    const ratio = u.planBytes > 0 ? u.usedBytes / u.planBytes : 0;
    const pct = Math.round(ratio * 100);
    if (ratio >= DISK_FIRE_RATIO && !isOpen.has(u.podId)) {
      await raiseAlert(env, db, {
        event: "disk_full",
        podId: u.podId,
        summary: (pod) => `${pod} uses ${gib(u.usedBytes)} of its ${gib(u.planBytes)} disk (${pct} %).`,
      });
    } else if (ratio < DISK_RESOLVE_RATIO && isOpen.has(u.podId)) {
      await resolveAlert(env, db, {
        event: "disk_full",
        podId: u.podId,
        summary: (pod) => `${pod} uses ${pct} % of its disk again.`,
      });
    }
  }
}

const NAMES_SHOWN = 10;
const listNames = (names: string[]) =>
  names.length <= NAMES_SHOWN
    ? names.join(", ")
    : `${names.slice(0, NAMES_SHOWN).join(", ")} and ${names.length - NAMES_SHOWN} more`;

async function podsByTeam(db: Db, hostId: string) {
  const rows = await db
    .select({ id: pods.id, name: pods.name, teamId: pods.teamId })
    .from(pods)
    .where(and(eq(pods.hostId, hostId), ne(pods.status, "deleted")));
  const byTeam = new Map<string, { id: string; name: string }[]>();
  for (const r of rows) byTeam.set(r.teamId, [...(byTeam.get(r.teamId) ?? []), r]);
  return byTeam;
}

const hostName = async (db: Db, hostId: string) =>
  (await db.select({ name: hosts.name }).from(hosts).where(eq(hosts.id, hostId)))[0]?.name ?? hostId;

/**
 * The host's agent has been gone `afterMs`: each team with pods there gets one `host_lost` incident
 * naming its pods (those whose rule is on; a team whose pods all have it off gets none).
 */
export async function alertOnHostLost(env: Bindings, db: Db, hostId: string, afterMs: number) {
  const name = await hostName(db, hostId);
  for (const [teamId, teamPods] of await podsByTeam(db, hostId)) {
    const watched: string[] = [];
    for (const pod of teamPods)
      if (await eventEnabled(db, teamId, pod.id, "host_lost")) watched.push(pod.name);
    if (watched.length === 0) continue;
    await raiseTeamAlert(env, db, {
      event: "host_lost",
      teamId,
      scope: hostId,
      rulesChecked: true,
      path: "/app",
      summary: () =>
        `Server ${name} has been unreachable for ${minutes(afterMs)}; its pods may be down: ${listNames(watched.sort())}.`,
    });
  }
}

/** Open incidents of an event: a range of the partial index on open keys (few rows, whatever the history). */
const openIncidentsOf = (db: Db, event: string) =>
  db
    .select({ teamId: alertIncidents.teamId, podId: alertIncidents.podId, key: alertIncidents.key })
    .from(alertIncidents)
    .where(
      and(
        gte(alertIncidents.key, `${event}:`),
        lt(alertIncidents.key, `${event};`),
        isNull(alertIncidents.resolvedAt),
      ),
    );

/** The host's agent is back: every team's open `host_lost` incident of this host closes. */
export async function resolveHostLost(env: Bindings, db: Db, hostId: string) {
  const open = (await openIncidentsOf(db, "host_lost")).filter((i) => i.key.endsWith(`:${hostId}`));
  if (open.length === 0) return;
  const name = await hostName(db, hostId);
  for (const { teamId } of open) {
    await resolveTeamAlert(env, db, {
      event: "host_lost",
      teamId,
      scope: hostId,
      path: "/app",
      summary: () => `Server ${name} is reachable again.`,
    });
  }
}
