import type { PodView } from "../../services/pods/view";
import { Curl } from "../components/curl";
import { podUrl, StatusBadge, Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";

export const PAGE_SIZE = 50;

interface PodsPage {
  pods: PodView[];
  total: number;
  limit: number;
  offset: number;
  status_counts: Record<string, number>;
}

/**
 * The rows of the pods table, also served alone as the fragment htmx fetches every 2 s
 * (`/app/pods/rows`): statuses change on the page without a reload, and the page a person is on
 * stays the page they are on.
 */
export function PodRows({ page, list }: { page: PageContext; list: PodsPage }) {
  const rowsUrl = `/app/pods/rows?offset=${list.offset}&limit=${list.limit}`;
  return (
    <tbody id="pod-rows" hx-get={rowsUrl} hx-trigger="every 2s" hx-swap="outerHTML">
      {list.pods.length === 0 ? (
        <tr>
          <td colspan={6} class="empty">
            No pods yet. <a href="/app/new">Create your first pod</a>.
          </td>
        </tr>
      ) : (
        list.pods.map((pod) => (
          <tr>
            <th scope="row">
              <a href={`/app/pods/${encodeURIComponent(pod.name)}`}>{pod.name}</a>
            </th>
            <td>
              <StatusBadge status={pod.status} />
            </td>
            <td>{pod.preset}</td>
            <td>{pod.plan_slug}</td>
            <td class="url">
              <a href={podUrl(page.ctx.env, pod.domain)} rel="noopener" target="_blank">
                {pod.domain}
              </a>
            </td>
            <td>
              <Time iso={pod.created_at} />
            </td>
          </tr>
        ))
      )}
    </tbody>
  );
}

export function PodsListPage({ page, list }: { page: PageContext; list: PodsPage }) {
  const { total, offset, limit } = list;
  const counts = Object.entries(list.status_counts);
  return (
    <Page page={page} section="pods" title="Pods">
      <div class="page-head">
        <h1>Pods</h1>
        <a class="button primary" href="/app/new">
          New pod
        </a>
      </div>
      {counts.length ? (
        <p class="muted">{counts.map(([status, n]) => `${n} ${status}`).join(" · ")}</p>
      ) : null}
      <div class="table-wrap">
        <table class="pods">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Preset</th>
              <th scope="col">Plan</th>
              <th scope="col">URL</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <PodRows page={page} list={list} />
        </table>
      </div>
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
        calls={[{ method: "GET", path: `/api/pods?limit=${limit}&offset=${offset}`, note: "This list" }]}
      />
    </Page>
  );
}
