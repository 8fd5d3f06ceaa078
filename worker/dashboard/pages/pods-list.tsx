import { html } from "hono/html";
import { findPlan } from "../../../shared/catalog";
import type { ServiceContext } from "../../services/context";
import {
  type LastDeployment,
  lastDeploymentsFromRows,
  lastDeploymentsStatement,
} from "../../services/git/last-deployments";
import { type RecentUsage, recentUsageStatement, usageFromRows } from "../../services/metrics/sparklines";
import { listPodsStatements, podsPage, podsPageIds } from "../../services/pods/list";
import type { PodView } from "../../services/pods/view";
import { Curl } from "../components/curl";
import { DataTable, EmptyRow } from "../components/data-table";
import { STATUS_POLL } from "../components/live";
import { podUrl, StatusBadge, Time } from "../components/pod-bits";
import { usageSparkline } from "../components/sparkline";
import { PageBody, type PageContext } from "../layout";

export const PAGE_SIZE = 50;

export interface PodsPage {
  pods: PodView[];
  total: number;
  limit: number;
  offset: number;
  status_counts: Record<string, number>;
  /** each pod's newest deployment, by pod id (absent: never deployed from git) */
  deploys: Map<string, LastDeployment>;
  /** each pod's CPU and memory of the last hour, by pod id (absent: no samples) */
  usage: Map<string, RecentUsage>;
}

/**
 * One page of the team's pods with what the list shows beside them, in ONE `db.batch` (one round
 * trip to D1, one consistent read): the page and its status counts are `listPods`'s own statements
 * (the verb behind `GET /api/pods`), and the page's last deploys and sparklines are read for the
 * same page by a subquery naming its pods, each one query for the whole page (never one per pod,
 * the sparklines folded into one short row per pod). A team of 1,000 pods costs the same as a team
 * of ten, every time the rows refresh.
 */
export async function loadPodsPage(
  ctx: ServiceContext,
  teamId: string,
  query: { limit: number; offset: number },
): Promise<PodsPage> {
  const q = listPodsStatements(ctx, teamId, query);
  const ids = podsPageIds(teamId, query);
  const [rows, counts, deploys, usage] = await ctx.db.batch([
    q.rows,
    q.counts,
    lastDeploymentsStatement(ctx.db, ids),
    recentUsageStatement(ctx.db, ids),
  ]);
  return {
    ...podsPage(ctx, query, rows, counts),
    deploys: lastDeploymentsFromRows(deploys),
    usage: usageFromRows(usage),
  };
}

/** "$5/mo", "$12.50/mo": a plan's monthly price in dollars, from cents. */
export const monthly = (cents: number) => `$${cents % 100 === 0 ? cents / 100 : (cents / 100).toFixed(2)}/mo`;

/** The plan's name and price, as text. */
function planCell(slug: string) {
  const plan = findPlan(slug);
  return plan ? html`${plan.name} <span class="muted">${monthly(plan.monthlyPrice)}</span>` : html`${slug}`;
}

function deployCell(deploy?: LastDeployment) {
  if (!deploy) return html`<span class="muted">—</span>`;
  return html`${StatusBadge({ status: deploy.status })} ${Time({ iso: deploy.finished_at ?? deploy.created_at })}`;
}

const COLUMNS = 8;

/**
 * The rows of the pods table, also served alone as the fragment htmx fetches every 1.5 s
 * (`/app/pods/rows`): statuses, last deploys and sparklines change on the page without a reload,
 * and the page a person is on stays the page they are on.
 *
 * The rows are one escaping template (`html`, which escapes every value as JSX does) rather than
 * JSX: a page of 50 rows is some 1,500 elements, and building and walking that many JSX nodes was
 * most of the list's render time (bench/dashboard.ts, docs/dashboard.md "Measured").
 */
export function PodRows({ page, list }: { page: PageContext; list: PodsPage }) {
  const rowsUrl = `/app/pods/rows?offset=${list.offset}&limit=${list.limit}`;
  const rows =
    list.pods.length === 0
      ? EmptyRow({
          span: COLUMNS,
          children: html`No pods yet. <a href="/app/new">Create your first pod</a>.`,
        })
      : list.pods.map(
          (pod) =>
            html`<tr data-pod="${pod.name}"><th scope="row"><a href="/app/pods/${encodeURIComponent(pod.name)}">${pod.name}</a></th><td>${StatusBadge({ status: pod.status })}</td><td>${pod.preset}</td><td>${planCell(pod.plan_slug)}</td><td class="url"><a href="${podUrl(page.ctx.env, pod.domain)}" rel="noopener" target="_blank">${pod.domain}</a></td><td>${deployCell(list.deploys.get(pod.id))}</td><td>${usageSparkline(list.usage.get(pod.id))}</td><td>${Time({ iso: pod.created_at })}</td></tr>`,
        );
  return html`<tbody id="pod-rows" hx-get="${rowsUrl}" hx-trigger="${STATUS_POLL}" hx-swap="outerHTML">${rows}</tbody>`;
}

export const PODS_TITLE = "Pods";

/** The pods list's `<body>`: the route streams its head first (../stream-page.tsx). */
export function PodsListBody({ page, list }: { page: PageContext; list: PodsPage }) {
  const { total, offset, limit } = list;
  const counts = Object.entries(list.status_counts);
  return (
    <PageBody page={page} section="pods">
      <div class="page-head">
        <h1>Pods</h1>
        <a class="button primary" href="/app/new">
          New pod
        </a>
      </div>
      {counts.length ? (
        <p class="muted">{counts.map(([status, n]) => `${n} ${status}`).join(" · ")}</p>
      ) : null}
      <DataTable
        label="Pods"
        columns={["Name", "Status", "Preset", "Plan", "URL", "Last deploy", "CPU / memory (1 h)", "Created"]}
        class="pods"
      >
        <PodRows page={page} list={list} />
      </DataTable>
      {total > limit ? (
        <nav class="pager" aria-label="Pages">
          {offset > 0 ? <a href={`/app?offset=${Math.max(0, offset - limit)}`}>← Newer</a> : <span />}
          <span class="muted">
            {offset + 1}–{Math.min(offset + limit, total)} of {total}
          </span>
          {offset + limit < total ? <a href={`/app?offset=${offset + limit}`}>Older →</a> : <span />}
        </nav>
      ) : null}
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: `/api/pods?limit=${limit}&offset=${offset}`, note: "This list" },
          {
            method: "GET",
            path: "/api/pods/{name}/git/deployments?limit=1",
            note: "A pod's last deploy",
          },
          { method: "GET", path: "/api/pods/{name}/metrics/history?hours=1", note: "A pod's CPU and memory" },
        ]}
      />
    </PageBody>
  );
}
