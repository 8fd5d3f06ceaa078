import { and, desc, eq, gte, lt, lte, or, type SQL } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { type AuditEventRow, auditEvents } from "../../db/schema";
import type { TeamCall } from "../context";
import { requireOwner } from "../teams/access";
import type { AuditAction } from "./actions";

/** Reading a team's audit log (docs/audit.md): the owner's, newest first, a page at a time. */

export const AUDIT_PAGE_MAX = 200;

export interface AuditQuery {
  userId: string;
  /** a user id, or an e-mail address (has an `@`) */
  actor?: string;
  pod?: string;
  action?: string;
  /** ISO times, inclusive */
  since?: string;
  until?: string;
  cursor?: string;
  limit: number;
}

export interface AuditEventView {
  id: string;
  at: string;
  actor: { id: string; email: string };
  credential: { kind: AuditEventRow["credential"]; label: string | null };
  ip: string | null;
  action: AuditAction;
  pod: string | null;
  target: string | null;
  outcome: "ok" | "error";
  status: number;
  detail: Record<string, unknown> | null;
}

export interface AuditPage {
  events: AuditEventView[];
  /** pass as `cursor` for the next (older) page; null on the last */
  next_cursor: string | null;
}

const toView = (row: AuditEventRow): AuditEventView => ({
  id: row.id,
  at: row.at,
  actor: { id: row.actorId, email: row.actorEmail },
  credential: { kind: row.credential, label: row.credentialLabel },
  ip: row.ip,
  // written only by auditRow, from an AuditAction
  action: row.action as AuditAction,
  pod: row.pod,
  target: row.target,
  outcome: row.outcome,
  status: row.status,
  detail: row.detail ? (JSON.parse(row.detail) as Record<string, unknown>) : null,
});

/** The cursor is the last row's (at, id), the order's key: stable however many rows arrive meanwhile. */
const encodeCursor = (row: AuditEventRow) => btoa(`${row.at}|${row.id}`).replaceAll("=", "");

function decodeCursor(cursor: string): { at: string; id: string } | null {
  let text: string;
  try {
    text = atob(cursor);
  } catch {
    return null;
  }
  const [at, id, ...rest] = text.split("|");
  if (!at || !id || rest.length > 0 || Number.isNaN(Date.parse(at)) || !id.startsWith("aud_")) return null;
  return { at, id };
}

/** An ISO time as stored (`toISOString`), so string order is time order; null when it is not a time. */
const normalized = (iso: string) => {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
};

export async function listAudit({ ctx, teamId, input }: TeamCall<AuditQuery>): Promise<Result<AuditPage>> {
  const access = await requireOwner(ctx.db, teamId, input.userId);
  if (!access.ok) return access;
  const where: SQL[] = [eq(auditEvents.teamId, teamId)];
  if (input.actor) {
    where.push(
      input.actor.includes("@")
        ? eq(auditEvents.actorEmail, input.actor)
        : eq(auditEvents.actorId, input.actor),
    );
  }
  if (input.pod) where.push(eq(auditEvents.pod, input.pod));
  if (input.action) where.push(eq(auditEvents.action, input.action));
  for (const [name, value, op] of [
    ["since", input.since, gte],
    ["until", input.until, lte],
  ] as const) {
    if (value === undefined) continue;
    const at = normalized(value);
    if (!at) return fail("bad_request", `${name}: must be an ISO 8601 time`);
    where.push(op(auditEvents.at, at));
  }
  if (input.cursor) {
    const after = decodeCursor(input.cursor);
    if (!after) return fail("bad_request", "cursor: not a cursor this API gave out");
    const older = or(
      lt(auditEvents.at, after.at),
      and(eq(auditEvents.at, after.at), lt(auditEvents.id, after.id)),
    );
    if (older) where.push(older);
  }
  const rows = await ctx.db
    .select()
    .from(auditEvents)
    .where(and(...where))
    .orderBy(desc(auditEvents.at), desc(auditEvents.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  return ok({
    events: page.map(toView),
    next_cursor: rows.length > input.limit && last ? encodeCursor(last) : null,
  });
}
