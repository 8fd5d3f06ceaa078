import { getTableColumns } from "drizzle-orm";
import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { type AuditEventRow, auditEvents } from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { Caller } from "../auth/caller";
import type { AuditAction, AuditFacts, RouteAudit } from "./actions";

/**
 * Building and writing audit rows (docs/audit.md). Everything stored that a tenant typed (a path, an
 * argv, a key's name, a repository URL) is bounded here, with a marker where it was cut: the log
 * must stay small per change however large the request was.
 */

export const TRUNCATED = "…[truncated]";
const TEXT_MAX = 300;
const ITEM_MAX = 256;
const LIST_BYTES_MAX = 2048;
const LIST_ITEMS_MAX = 100;

export const cap = (s: string, max = TEXT_MAX) => (s.length > max ? `${s.slice(0, max)}${TRUNCATED}` : s);

/** A list of strings (an argv, key names) kept to LIST_BYTES_MAX characters, the rest counted. */
function capList(items: unknown[]): string[] {
  const out: string[] = [];
  let used = 0;
  for (const [i, item] of items.entries()) {
    const text = cap(String(item), ITEM_MAX);
    if (out.length >= LIST_ITEMS_MAX || used + text.length > LIST_BYTES_MAX) {
      out.push(`${TRUNCATED} ${items.length - i} more`);
      break;
    }
    out.push(text);
    used += text.length;
  }
  return out;
}

function boundDetail(detail: Record<string, unknown> | undefined): string | null {
  if (!detail) return null;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(detail)) {
    if (Array.isArray(value)) kept[key] = capList(value);
    else if (typeof value === "string") kept[key] = cap(value);
    else if (typeof value === "number" || typeof value === "boolean") kept[key] = value;
  }
  return Object.keys(kept).length > 0 ? JSON.stringify(kept) : null;
}

const text = (v: unknown) => (typeof v === "string" || typeof v === "number" ? cap(String(v)) : null);

export interface AuditOrigin {
  caller: Caller;
  ip: string | undefined;
  /** the team whose log it goes into when the entry does not say otherwise */
  teamId: string;
  status: number;
}

/** The row for one change, or null when it names no team to record it for. */
export function auditRow(entry: RouteAudit, facts: AuditFacts, origin: AuditOrigin): AuditEventRow | null {
  const { caller } = origin;
  const team =
    entry.team === undefined ? origin.teamId : entry.team === "param" ? facts.param("id") : entry.team(facts);
  if (typeof team !== "string" || team.length === 0 || team.length > 64) return null;
  return {
    id: newId("aud"),
    teamId: team,
    at: nowIso(),
    actorId: caller.user.id,
    actorEmail: cap(caller.user.email, 320),
    credential: caller.via,
    credentialLabel: caller.credentialLabel ? cap(caller.credentialLabel, 100) : null,
    ip: origin.ip ? cap(origin.ip, 64) : null,
    action: entry.action,
    pod: text(entry.pod ? entry.pod(facts) : facts.param("name")),
    target: text(entry.target?.(facts)),
    outcome: origin.status < 400 ? "ok" : "error",
    status: origin.status,
    detail: boundDetail(entry.detail?.(facts)),
  };
}

/** A change recorded outside a REST route's entry: a connector's consent. */
export function directAuditRow(
  action: AuditAction,
  origin: AuditOrigin,
  target?: string,
): AuditEventRow | null {
  return auditRow({ action, target: () => target }, noFacts, origin);
}

const noFacts: AuditFacts = {
  param: () => undefined,
  body: undefined,
  query: undefined,
  response: undefined,
};

/**
 * Records one request's rows: a row naming a team other than the caller's (a team route's `{id}`)
 * goes into that team's log only if the caller is a member of it; a stranger's attempt on another
 * team (answered 404, or 400 before any check) goes into the stranger's own log, so nobody can
 * write into a team's log from outside it. Runs in `waitUntil`; a failure is logged, never the
 * request's.
 *
 * The statements are prepared by hand, not through drizzle's query builder: building one insert
 * with it costs about 1.4 ms of CPU on a busy 2-core machine (measured), more than the whole budget
 * a request has for its record; a prepared statement costs a few microseconds.
 */
export async function recordAudit(db: Db, caller: Caller, rows: AuditEventRow[]): Promise<void> {
  const d1 = db.$client;
  try {
    const placed: AuditEventRow[] = [];
    for (const row of rows) {
      if (row.teamId === caller.teamId) {
        placed.push(row);
        continue;
      }
      const member = await d1
        .prepare("SELECT 1 FROM team_members WHERE team_id = ? AND user_id = ? LIMIT 1")
        .bind(row.teamId, caller.user.id)
        .first();
      placed.push(member ? row : { ...row, teamId: caller.teamId });
    }
    const [first, ...rest] = placed.map((row) => d1.prepare(INSERT).bind(...COLUMNS.map((c) => row[c])));
    if (!first) return;
    if (rest.length === 0) await first.run();
    else await d1.batch([first, ...rest]);
  } catch (error) {
    console.error(JSON.stringify({ msg: "audit write failed", rows: rows.length, error: String(error) }));
  }
}

/** The row's fields in the table's column order (schema/audit.ts). */
const COLUMNS = [
  "id",
  "teamId",
  "at",
  "actorId",
  "actorEmail",
  "credential",
  "credentialLabel",
  "ip",
  "action",
  "pod",
  "target",
  "outcome",
  "status",
  "detail",
] as const satisfies readonly (keyof AuditEventRow)[];

const INSERT = `INSERT INTO audit_events (${COLUMNS.map((c) => getTableColumns(auditEvents)[c].name).join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`;
