import { and, asc, desc, eq, inArray, isNotNull, ne, or } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import {
  backups,
  type HostRow,
  hosts,
  type MoveKind,
  type PodMoveRow,
  podMoves,
  pods,
} from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";
import { raiseTeamAlert, resolveTeamAlert } from "../alerts/raise";
import { recordEventStatement } from "../pods/events";
import { isAlive } from "./hosts";

/**
 * Emptying a host (docs/hosts.md "Emptying a host", docs/operations.md): every pod of the host gets
 * a `pod_moves` row, and the pod-move workflow (worker/workflows/pod-move/) moves them one at a
 * time, each instance starting the next when it ends (`startNextMove`).
 * - `evacuate`: the host is drained and each pod copied live to another host of its region.
 * - `lost`: the host is gone for good; each pod is recreated on another host from its latest
 *   verified backup. A pod without one is `skipped`, with an event saying so, never recreated empty.
 */

export interface MoveView {
  id: string;
  pod: string;
  kind: MoveKind;
  status: PodMoveRow["status"];
  from_host: string;
  to_host: string | null;
  ssh_port: number | null;
  backup_at: string | null;
  downtime_ms: number | null;
  reason: string | null;
  created_at: string;
  ended_at: string | null;
}

export interface HostMovesView {
  host: string;
  moves: MoveView[];
}

export const toMoveView = (row: PodMoveRow, names: ReadonlyMap<string, string>): MoveView => ({
  id: row.id,
  pod: row.podName,
  kind: row.kind,
  status: row.status,
  from_host: names.get(row.fromHostId) ?? row.fromHostId,
  to_host: row.toHostId ? (names.get(row.toHostId) ?? row.toHostId) : null,
  ssh_port: row.sshPort,
  backup_at: row.backupAt,
  downtime_ms: row.downtimeMs,
  reason: row.reason,
  created_at: row.createdAt,
  ended_at: row.endedAt,
});

export async function findHostByName(db: Db, nameOrId: string): Promise<HostRow | undefined> {
  return (
    await db
      .select()
      .from(hosts)
      .where(or(eq(hosts.name, nameOrId), eq(hosts.id, nameOrId)))
      .limit(1)
  )[0];
}

const hostNames = async (db: Db): Promise<Map<string, string>> =>
  new Map((await db.select({ id: hosts.id, name: hosts.name }).from(hosts)).map((h) => [h.id, h.name]));

/** The latest backup of the pod that passed its test-restore, or none. */
export async function latestVerifiedBackup(db: Db, podId: string) {
  return (
    await db
      .select()
      .from(backups)
      .where(and(eq(backups.podId, podId), eq(backups.status, "completed"), isNotNull(backups.verifiedAt)))
      .orderBy(desc(backups.createdAt))
      .limit(1)
  )[0];
}

/**
 * Queues a move for every pod of the host that has none under way, then starts the first if no move
 * of the host runs. `evacuate` needs the host's agent (the files come from it) and drains the host;
 * `lost` needs it gone (a connected host is evacuated instead) and drains it too, so nothing new
 * lands there should it come back.
 */
export async function startHostMoves({
  env,
  db,
  input,
}: {
  env: Bindings;
  db: Db;
  input: { host: string; kind: MoveKind };
}): Promise<Result<HostMovesView>> {
  const host = await findHostByName(db, input.host);
  if (!host) return fail("not_found", `no host named ${input.host}`);
  if (input.kind === "evacuate" && !isAlive(host))
    return fail(
      "unavailable",
      `server ${host.name} is offline: evacuating copies its pods from it; if it is gone for good, declare it lost`,
    );
  if (input.kind === "lost" && isAlive(host))
    return fail("conflict", `server ${host.name} is connected: evacuate it instead of declaring it lost`);
  await db.update(hosts).set({ drained: true }).where(eq(hosts.id, host.id));

  const resident = await db
    .select()
    .from(pods)
    .where(and(eq(pods.hostId, host.id), ne(pods.status, "deleted")))
    .orderBy(asc(pods.createdAt));
  const now = nowIso();
  const queued: PodMoveRow[] = [];
  for (const pod of resident) {
    const backup = input.kind === "lost" ? await latestVerifiedBackup(db, pod.id) : undefined;
    const skipped = input.kind === "lost" && !backup;
    const row: PodMoveRow = {
      id: newId("mv"),
      podId: pod.id,
      podName: pod.name,
      kind: input.kind,
      status: skipped ? "skipped" : "queued",
      fromHostId: host.id,
      toHostId: null,
      sshPort: null,
      backupId: backup?.id ?? null,
      backupAt: backup?.createdAt ?? null,
      downtimeMs: null,
      reason: skipped ? "no verified backup: the pod cannot be recreated" : null,
      createdAt: now,
      endedAt: skipped ? now : null,
    };
    // a pod already on its way out keeps that move (the partial unique index on open moves)
    const [inserted] = await db.insert(podMoves).values(row).onConflictDoNothing().returning();
    if (!inserted) continue;
    queued.push(inserted);
    if (skipped)
      await recordEventStatement(
        db,
        pod.id,
        "move_failed",
        `server ${host.name} was declared lost and pod ${pod.name} has no verified backup: it was not recreated`,
        { from_host: host.name },
      );
  }
  if (input.kind === "lost") await alertOwnersOfLostHost(env, db, host, queued);
  const started = await startNextMove(env, db, host.id);
  if (!started.ok) return started;
  const names = await hostNames(db);
  return ok({ host: host.name, moves: queued.map((m) => toMoveView(m, names)) });
}

/**
 * Starts the host's next queued move unless one is moving: one pod at a time, in the order they
 * were queued. Called by the request and by each move's workflow as it ends.
 */
export async function startNextMove(
  env: Bindings,
  db: Db,
  fromHostId: string,
): Promise<Result<string | null>> {
  // One drain queues all its moves at the same instant: they go in the order the pods were made,
  // not by their random ids, so an operator (and a test) knows which pod moves first.
  const open = (
    await db
      .select({ move: podMoves })
      .from(podMoves)
      .innerJoin(pods, eq(pods.id, podMoves.podId))
      .where(and(eq(podMoves.fromHostId, fromHostId), inArray(podMoves.status, ["queued", "moving"])))
      .orderBy(asc(podMoves.createdAt), asc(pods.createdAt), asc(podMoves.id))
  ).map((r) => r.move);
  if (open.some((m) => m.status === "moving")) return ok(null);
  const next = open[0];
  if (!next) return ok(null);
  const [claimed] = await db
    .update(podMoves)
    .set({ status: "moving" })
    .where(and(eq(podMoves.id, next.id), eq(podMoves.status, "queued")))
    .returning();
  if (!claimed) return ok(null); // another caller took it
  try {
    await env.POD_MOVE.create({ id: next.id, params: { moveId: next.id } });
  } catch (error) {
    // An instance of that id exists already (a retried start): it runs the move.
    const message = error instanceof Error ? error.message : String(error);
    if (!/already exists|already_exists/i.test(message)) {
      const reason = `the move could not be started: ${message}`;
      await db
        .update(podMoves)
        .set({ status: "error", reason, endedAt: nowIso() })
        .where(eq(podMoves.id, next.id));
      return fail("unavailable", reason);
    }
  }
  return ok(next.id);
}

/** The host's moves, newest request last. */
export async function listHostMoves({
  db,
  input,
}: {
  db: Db;
  input: { host: string };
}): Promise<Result<HostMovesView>> {
  const host = await findHostByName(db, input.host);
  if (!host) return fail("not_found", `no host named ${input.host}`);
  const rows = await db
    .select()
    .from(podMoves)
    .where(eq(podMoves.fromHostId, host.id))
    .orderBy(asc(podMoves.createdAt), asc(podMoves.id))
    .limit(1000);
  const names = await hostNames(db);
  return ok({ host: host.name, moves: rows.map((m) => toMoveView(m, names)) });
}

/**
 * The owners of a lost host's pods are told at once, one `host_lost` alert per team (the incident of
 * that host, if the agent's silence opened it already, stays the one), naming which pods come back
 * from which backup and which cannot.
 */
async function alertOwnersOfLostHost(env: Bindings, db: Db, host: HostRow, moves: PodMoveRow[]) {
  const teamOf = new Map(
    (
      await db
        .select({ id: pods.id, teamId: pods.teamId })
        .from(pods)
        .where(
          inArray(
            pods.id,
            moves.map((m) => m.podId),
          ),
        )
    ).map((p) => [p.id, p.teamId]),
  );
  const byTeam = new Map<string, PodMoveRow[]>();
  for (const m of moves) {
    const team = teamOf.get(m.podId);
    if (team) byTeam.set(team, [...(byTeam.get(team) ?? []), m]);
  }
  for (const [teamId, teamMoves] of byTeam) {
    const back = teamMoves.filter((m) => m.status !== "skipped");
    const gone = teamMoves.filter((m) => m.status === "skipped");
    const parts = [
      back.length > 0
        ? `being recreated on other servers from their latest verified backups: ${back.map((m) => `${m.podName} (backup of ${m.backupAt})`).join(", ")}`
        : "",
      gone.length > 0
        ? `without a verified backup, not recreated: ${gone.map((m) => m.podName).join(", ")}`
        : "",
    ].filter(Boolean);
    await raiseTeamAlert(env, db, {
      event: "host_lost",
      teamId,
      scope: lostScope(host.id),
      path: "/app",
      summary: () => `Server ${host.name} was declared lost. Its pods are ${parts.join("; ")}.`,
    });
  }
}

/**
 * The declaration's own incident (not the agent's silence's, which closes only when the agent is
 * back): opened when the host is declared lost, closed once every move of it ended.
 */
const lostScope = (hostId: string) => `${hostId}:lost`;

/**
 * The lost host's last move ended: each team's incident closes with what came back where, from
 * which backup, and what did not.
 */
export async function resolveLostHostAlerts(env: Bindings, db: Db, hostId: string) {
  const rows = await db
    .select({ move: podMoves, teamId: pods.teamId })
    .from(podMoves)
    .innerJoin(pods, eq(pods.id, podMoves.podId))
    .where(and(eq(podMoves.fromHostId, hostId), eq(podMoves.kind, "lost")));
  if (rows.some((r) => r.move.status === "queued" || r.move.status === "moving")) return;
  const names = await hostNames(db);
  const hostName = names.get(hostId) ?? hostId;
  // the latest move of each pod speaks for it
  const latest = new Map<string, (typeof rows)[number]>();
  for (const r of rows) {
    const seen = latest.get(r.move.podId);
    if (!seen || seen.move.createdAt <= r.move.createdAt) latest.set(r.move.podId, r);
  }
  const byTeam = new Map<string, PodMoveRow[]>();
  for (const { move, teamId } of latest.values()) byTeam.set(teamId, [...(byTeam.get(teamId) ?? []), move]);
  for (const [teamId, moves] of byTeam) {
    const done = moves.filter((m) => m.status === "done");
    const not = moves.filter((m) => m.status !== "done");
    const parts = [
      done.length > 0
        ? `recreated: ${done.map((m) => `${m.podName} on ${names.get(m.toHostId ?? "") ?? m.toHostId} from the backup of ${m.backupAt}`).join(", ")}`
        : "",
      not.length > 0
        ? `not recreated: ${not.map((m) => `${m.podName} (${m.reason ?? m.status})`).join(", ")}`
        : "",
    ].filter(Boolean);
    await resolveTeamAlert(env, db, {
      event: "host_lost",
      teamId,
      scope: lostScope(hostId),
      path: "/app",
      summary: () => `The pods of lost server ${hostName} are ${parts.join("; ")}.`,
    });
  }
}
