import type { CatalogAgentView, CodingAgentView } from "../../services/coding-agents/views";
import type { PodView } from "../../services/pods/view";
import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { DataTable } from "../components/data-table";
import { StatusBadge, Time } from "../components/pod-bits";
import { PodPage, podPath } from "../components/pod-page";
import type { PageContext } from "../layout";

export interface AgentsData {
  catalog: CatalogAgentView[];
  agents: CodingAgentView[];
}

function AgentState({ agent }: { agent: CodingAgentView | undefined }) {
  if (!agent) return <span class="muted">not installed</span>;
  return (
    <>
      <StatusBadge status={agent.status} />
      {agent.status === "installed" ? (
        <span class="agent-detail">
          {" "}
          {agent.version} on Node {agent.node_major}
          {agent.node_pinned ? " (pinned)" : ""} · <Time iso={agent.installed_at} />
        </span>
      ) : null}
      {agent.status === "installing" ? (
        <span class="agent-detail">
          {" "}
          since <Time iso={agent.installed_at} />
        </span>
      ) : null}
      {agent.status === "error" ? <p class="form-error">{agent.error_msg ?? "the install failed"}</p> : null}
    </>
  );
}

/**
 * The catalog with this pod's state of each agent, also served alone as the fragment htmx fetches
 * every 2 s while an install runs (`…/agents/rows`): once none is installing, the fragment comes
 * back without its trigger and the polling stops.
 */
export function AgentRows({ pod, data }: { pod: PodView; data: AgentsData }) {
  const api = `/api/pods/${encodeURIComponent(pod.name)}/agents`;
  const bySlug = new Map(data.agents.map((a) => [a.slug, a]));
  const live = data.agents.some((a) => a.status === "installing");
  return (
    <tbody
      id="agent-rows"
      hx-get={live ? `${podPath(pod.name, "agents")}/rows` : undefined}
      hx-trigger={live ? "every 2s" : undefined}
      hx-swap={live ? "outerHTML" : undefined}
    >
      {data.catalog.map((entry) => {
        const agent = bySlug.get(entry.slug);
        return (
          <tr>
            <th scope="row">
              {entry.name}
              <div class="muted agent-desc">{entry.description}</div>
            </th>
            <td>
              <code>{entry.command}</code>
              <div class="muted">
                <code>{entry.package}</code> · Node {entry.min_node}+
              </div>
            </td>
            <td aria-live="polite">
              <AgentState agent={agent} />
            </td>
            <td>
              {agent?.status === "installed" ? (
                <ApiForm
                  action={`${api}/${entry.slug}`}
                  method="DELETE"
                  confirm={`Remove ${entry.name} from ${pod.name}? What its sign-in wrote stays in the pod.`}
                >
                  <button type="submit" class="danger small">
                    Remove {entry.name}
                  </button>
                </ApiForm>
              ) : agent?.status === "installing" ? null : (
                <ApiForm action={api}>
                  <input type="hidden" name="agent" value={entry.slug} />
                  <button type="submit" class="primary small">
                    {agent?.status === "error" ? `Install ${entry.name} again` : `Install ${entry.name}`}
                  </button>
                </ApiForm>
              )}
            </td>
          </tr>
        );
      })}
    </tbody>
  );
}

/** A pod's coding agents (docs/coding-agents.md): the catalog, install, the live status, remove. */
export function AgentsTab({ page, pod, data }: { page: PageContext; pod: PodView; data: AgentsData }) {
  const api = `/api/pods/${encodeURIComponent(pod.name)}/agents`;
  const installed = data.agents.find((a) => a.status === "installed");
  return (
    <PodPage page={page} pod={pod} tab="agents">
      <h2>Coding agents</h2>
      <p class="muted">
        Command-line coding agents from the npm registry, installed into the pod's own npm prefix. Sign the
        agent in with your own account inside the pod (SSH or the terminal): the service stores no credential.
        Installing needs the pod running.
      </p>
      <DataTable label="Coding agents" columns={["Agent", "Command", "Status", "Action"]} class="agents">
        <AgentRows pod={pod} data={data} />
      </DataTable>
      <h3>Install a given version</h3>
      <ApiForm action={api} class="card agent-version">
        <label>
          Agent
          <select name="agent">
            {data.catalog.map((entry) => (
              <option value={entry.slug}>{entry.name}</option>
            ))}
          </select>
        </label>
        <label>
          Version <span class="muted">(an exact version such as 1.2.3, or a dist-tag; default latest)</span>
          <input name="version" maxlength={64} placeholder="latest" data-optional autocomplete="off" />
        </label>
        <button type="submit">Install this version</button>
      </ApiForm>
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: "/api/agents", note: "The catalog" },
          { method: "GET", path: api, note: "This pod's agents (poll while installing)" },
          { method: "POST", path: api, body: { agent: "codex" }, note: "Install one (202)" },
          {
            method: "DELETE",
            path: `${api}/${installed?.slug ?? "codex"}`,
            note: "Remove one",
          },
        ]}
      />
    </PodPage>
  );
}
