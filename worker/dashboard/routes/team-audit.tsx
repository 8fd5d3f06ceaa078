import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { AUDIT_ACTIONS, type AuditAction } from "../../services/audit/actions";
import { listAudit } from "../../services/audit/list";
import { getTeam } from "../../services/teams/teams";
import { pageContext } from "../layout";
import { AUDIT_SHOWN, type AuditFilters, asUtc, TeamAuditPage } from "../pages/team-audit";
import { requireSignedIn } from "../session";

/**
 * The active team's audit log (docs/dashboard.md "Audit log"), read with the verb
 * `GET /api/teams/{id}/audit` calls, its filters and cursor as a plain GET form and links. The log
 * is the owner's: anyone else gets the page with a note and none of it (the verb's own 403).
 */
export const teamAuditPages = new Hono<AppEnv>();

const field = (value: string | undefined, max: number) => (value ?? "").trim().slice(0, max);

teamAuditPages.get("/team/audit", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const { ctx, caller } = page;
  const team = unwrap(await getTeam(ctx, caller.user.id, caller.teamId));
  const asked = field(c.req.query("action"), 64);
  const filters: AuditFilters = {
    actor: field(c.req.query("actor"), 320),
    pod: field(c.req.query("pod"), 63),
    action: (AUDIT_ACTIONS as readonly string[]).includes(asked) ? (asked as AuditAction) : "",
    since: field(c.req.query("since"), 40),
    until: field(c.req.query("until"), 40),
    cursor: field(c.req.query("cursor"), 200),
  };
  if (team.role !== "owner")
    return c.html(<TeamAuditPage page={page} team={team} filters={filters} read={null} />);
  const read = await listAudit({
    ctx,
    teamId: team.id,
    input: {
      userId: caller.user.id,
      limit: AUDIT_SHOWN,
      ...(filters.actor ? { actor: filters.actor } : {}),
      ...(filters.pod ? { pod: filters.pod } : {}),
      ...(filters.action ? { action: filters.action } : {}),
      ...(filters.since ? { since: asUtc(filters.since) } : {}),
      ...(filters.until ? { until: asUtc(filters.until) } : {}),
      ...(filters.cursor ? { cursor: filters.cursor } : {}),
    },
  });
  return c.html(
    <TeamAuditPage
      page={page}
      team={team}
      filters={filters}
      read={read.ok ? { ok: true, page: read.value } : { ok: false, error: read.message }}
    />,
  );
});
