import { AUDIT_ACTIONS, type AuditAction } from "../../services/audit/actions";
import type { AuditPage } from "../../services/audit/list";
import type { TeamView } from "../../services/teams/teams";
import { Curl } from "../components/curl";
import { DataTable, EmptyRow } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";

/** rows per page */
export const AUDIT_SHOWN = 50;

export interface AuditFilters {
  actor: string;
  pod: string;
  action: AuditAction | "";
  /** the picker's times (UTC), as typed */
  since: string;
  until: string;
  cursor: string;
}

const CREDENTIALS = { session: "session", api_token: "API token", connector: "connector" } as const;

/** The team's audit log (owner only): filters, a page of rows newest first, the next page's link. */
export function TeamAuditPage({
  page,
  team,
  filters,
  read,
}: {
  page: PageContext;
  team: TeamView;
  filters: AuditFilters;
  /** null: not the owner's page */
  read: { ok: true; page: AuditPage } | { ok: false; error: string } | null;
}) {
  const api = `/api/teams/${encodeURIComponent(team.id)}/audit`;
  const query = new URLSearchParams({ limit: String(AUDIT_SHOWN) });
  for (const key of ["actor", "pod", "action", "since", "until"] as const) {
    const value = filters[key];
    if (value) query.set(key, key === "since" || key === "until" ? asUtc(value) : value);
  }
  const next = read?.ok ? read.page.next_cursor : null;
  const nextQuery = new URLSearchParams();
  for (const key of ["actor", "pod", "action", "since", "until"] as const) {
    if (filters[key]) nextQuery.set(key, filters[key]);
  }
  if (next) nextQuery.set("cursor", next);
  const withCursor = new URLSearchParams(query);
  if (filters.cursor) withCursor.set("cursor", filters.cursor);
  return (
    <Page page={page} section="team" title={`Audit log · ${team.name}`}>
      <p class="crumbs">
        <a href="/app/team">Team</a> /
      </p>
      <div class="page-head">
        <h1>Audit log</h1>
        <span class="muted">
          {team.name} · you are {team.role}
        </span>
      </div>
      {read === null ? (
        <p class="banner" role="note">
          The audit log is the team owner's: ask an owner of {team.name}.
        </p>
      ) : (
        <>
          <p>Every change made to the team through the API, this dashboard, the CLI or MCP, newest first.</p>
          <form method="get" action="/app/team/audit" class="filter-form audit-filter">
            <label>
              Actor (e-mail or user id)
              <input type="search" name="actor" value={filters.actor} maxlength={320} />
            </label>
            <label>
              Pod
              <input type="search" name="pod" value={filters.pod} maxlength={63} />
            </label>
            <label>
              Action
              <select name="action">
                <option value="" selected={filters.action === ""}>
                  any
                </option>
                {AUDIT_ACTIONS.map((a) => (
                  <option value={a} selected={a === filters.action}>
                    {a}
                  </option>
                ))}
              </select>
            </label>
            <label>
              From (UTC)
              <input type="datetime-local" name="since" value={filters.since} step={60} />
            </label>
            <label>
              To (UTC)
              <input type="datetime-local" name="until" value={filters.until} step={60} />
            </label>
            <button type="submit">Filter</button>
            <a href="/app/team/audit">Clear filters</a>
          </form>
          {read.ok ? (
            <AuditTable events={read.page.events} />
          ) : (
            <p class="error" role="alert">
              {read.error}
            </p>
          )}
          <p class="actions">
            {filters.cursor ? <a href="/app/team/audit">Newest</a> : null}
            {next ? <a href={`/app/team/audit?${nextQuery}`}>Older changes</a> : null}
          </p>
        </>
      )}
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: `${api}?${withCursor}`, note: "This page of the audit log (owner only)" },
          ...(next
            ? [
                {
                  method: "GET",
                  path: `${api}?${query}&cursor=${encodeURIComponent(next)}`,
                  note: "The next, older page",
                },
              ]
            : []),
        ]}
      />
    </Page>
  );
}

function AuditTable({ events }: { events: AuditPage["events"] }) {
  return (
    <DataTable
      label="Audit log, newest first"
      class="audit"
      columns={["When", "Who", "Action", "Pod", "Target", "Outcome", "IP"]}
    >
      <tbody>
        {events.length === 0 ? (
          <EmptyRow span={7}>No changes recorded with these filters.</EmptyRow>
        ) : (
          events.map((e) => (
            <tr>
              <td>
                <Time iso={e.at} />
              </td>
              <td>
                {e.actor.email}
                <br />
                <span class="muted">
                  {CREDENTIALS[e.credential.kind]}
                  {e.credential.label ? ` ${e.credential.label}` : ""}
                </span>
              </td>
              <td>
                <code>{e.action}</code>
                {e.detail ? (
                  <>
                    <br />
                    <code class="muted audit-detail">{JSON.stringify(e.detail)}</code>
                  </>
                ) : null}
              </td>
              <td>{e.pod ?? ""}</td>
              <td class="audit-target">{e.target ?? ""}</td>
              <td>{e.outcome === "ok" ? `ok (${e.status})` : `failed (${e.status})`}</td>
              <td>{e.ip ?? ""}</td>
            </tr>
          ))
        )}
      </tbody>
    </DataTable>
  );
}

/** the picker's minutes-only time (UTC) as ISO 8601; anything else as typed (the verb judges it) */
export const asUtc = (value: string) =>
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(value) ? `${value}:00Z` : value;
