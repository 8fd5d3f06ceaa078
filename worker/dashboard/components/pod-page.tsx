import type { Child } from "hono/jsx";
import { findTeamPod } from "../../services/pods/lookup";
import { type PodView, toPodView } from "../../services/pods/view";
import type { AssetName } from "../assets";
import { Page, type PageContext } from "../layout";
import { STATUS_POLL } from "./live";
import { podUrl, StatusBadge } from "./pod-bits";

/** A pod's tabs, in the order the page shows them; the path segment after `/app/pods/{name}`. */
export const POD_TABS = [
  ["overview", "Overview"],
  ["logs", "Logs"],
  ["metrics", "Metrics"],
  ["files", "Files"],
  ["terminal", "Terminal"],
  ["env", "Environment"],
  ["deploys", "Deploys"],
  ["databases", "Databases"],
  ["backups", "Backups"],
  ["domains", "Domains"],
  ["feedback", "Feedback"],
  ["agents", "Coding agents"],
  ["events", "Events"],
] as const;

export type PodTab = (typeof POD_TABS)[number][0];

export const podPath = (name: string, tab: PodTab = "overview") =>
  `/app/pods/${encodeURIComponent(name)}${tab === "overview" ? "" : `/${tab}`}`;

/** The team's pod by name as the API shows it (no call to its host: the page must not wait on one). */
export async function podForPage(page: PageContext, name: string): Promise<PodView | undefined> {
  const found = await findTeamPod(page.ctx.db, page.caller.teamId, name);
  return found.ok
    ? toPodView(found.value.pod, found.value.host?.name ?? null, page.ctx.env.POD_DOMAIN)
    : undefined;
}

interface PodPageProps {
  page: PageContext;
  pod: PodView;
  tab: PodTab;
  children: Child;
  scripts?: AssetName[];
  styles?: AssetName[];
}

/**
 * A pod's page: its name, status (kept live by the same 1.5 s fragment poll as the list) and URL above
 * the tabs, then the tab's content.
 */
export function PodPage({ page, pod, tab, children, scripts, styles }: PodPageProps) {
  const label = POD_TABS.find(([key]) => key === tab)?.[1] ?? "";
  return (
    <Page page={page} section="pods" title={`${pod.name} · ${label}`} scripts={scripts} styles={styles}>
      <p class="crumbs">
        <a href="/app">Pods</a> /
      </p>
      <div class="page-head">
        <h1>
          {pod.name}{" "}
          <span
            id="pod-status"
            hx-get={`${podPath(pod.name)}/status`}
            hx-trigger={STATUS_POLL}
            hx-swap="innerHTML"
          >
            <StatusBadge status={pod.status} />
          </span>
        </h1>
        <a href={podUrl(page.ctx.env, pod.domain)} rel="noopener" target="_blank">
          {pod.domain} ↗
        </a>
      </div>
      <nav class="tabs" aria-label="Pod">
        {POD_TABS.map(([key, text]) => (
          <a href={podPath(pod.name, key)} aria-current={key === tab ? "page" : undefined}>
            {text}
          </a>
        ))}
      </nav>
      {children}
    </Page>
  );
}
