import type { DeploymentView, GitConfigView } from "../../../services/git/views";
import type { PodView } from "../../../services/pods/view";
import { ApiForm } from "../../components/api-form";
import { Curl, type CurlCall } from "../../components/curl";
import { DataTable, EmptyRow } from "../../components/data-table";
import { StatusBadge, Time } from "../../components/pod-bits";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";
import { duration, SecretSlot } from "./bits";

export interface DeploysData {
  config: GitConfigView | null;
  deployments: DeploymentView[];
  /** deployments whose release is kept on the host and is not the one serving: roll back targets */
  rollbackable: Set<string>;
  /** the id of the deployment serving now, if any */
  serving: string | null;
  /** the deployment whose build log is shown, with its log when it has ended */
  shown: (DeploymentView & { build_log?: string }) | null;
}

const api = (pod: Pick<PodView, "name">) => `/api/pods/${pod.name}/git`;

/** The history's rows, also served alone for htmx: polled every 2 s while a deployment runs. */
export function DeployRows({
  pod,
  data,
}: {
  pod: Pick<PodView, "name">;
  data: Omit<DeploysData, "config" | "shown">;
}) {
  const running = data.deployments.some((d) => d.status === "deploying");
  return (
    <tbody
      id="deploy-rows"
      hx-get={`${podPath(pod.name, "deploys")}/rows`}
      hx-trigger={running ? "every 2s, refresh" : "refresh"}
      hx-swap="outerHTML"
    >
      {data.deployments.length === 0 ? (
        <EmptyRow span={7}>No deployments yet.</EmptyRow>
      ) : (
        data.deployments.map((d) => (
          <tr>
            <td>
              <StatusBadge status={d.status} />
              {d.id === data.serving ? <span class="muted"> serving</span> : null}
              {d.started_at === null && d.status === "deploying" ? <span class="muted"> queued</span> : null}
            </td>
            <td>{d.trigger}</td>
            <td class="commit">
              {d.commit_sha ? <code>{d.commit_sha.slice(0, 8)}</code> : <span class="muted">—</span>}{" "}
              <span class="commit-message">{d.commit_message ?? ""}</span>
              {d.failure ? (
                <span class="failure">
                  {d.failure.class}: {d.failure.message}
                </span>
              ) : null}
            </td>
            <td>
              <Time iso={d.created_at} />
            </td>
            <td>{duration(d.started_at, d.finished_at)}</td>
            <td>
              <a href={`${podPath(pod.name, "deploys")}?deployment=${encodeURIComponent(d.id)}#build-log`}>
                Build log
              </a>
            </td>
            <td>
              {data.rollbackable.has(d.id) ? (
                <ApiForm
                  action={`${api(pod)}/rollback`}
                  confirm={`Roll pod ${pod.name} back to deployment ${d.id}${d.commit_sha ? ` (${d.commit_sha.slice(0, 8)})` : ""}? Its release replaces the one serving now.`}
                  class="inline"
                >
                  <input type="hidden" name="deployment_id" value={d.id} />
                  <button type="submit" class="small">
                    Roll back to this
                  </button>
                </ApiForm>
              ) : null}
            </td>
          </tr>
        ))
      )}
    </tbody>
  );
}

function ConnectForm({ pod }: { pod: PodView }) {
  return (
    <section class="card">
      <h2>Connect a repository</h2>
      <p class="muted">
        Each push to the branch deploys (turn it off below); a token is needed for a private repository, and
        for a hosted one to create the push hook.
      </p>
      <ApiForm action={api(pod)} then="reload" id="connect-git">
        <label>
          Repository URL (https)
          <input name="repo_url" type="url" required placeholder="https://github.com/acme/site.git" />
        </label>
        <label>
          Access token (optional)
          <input name="auth_token" type="password" autocomplete="off" data-optional />
        </label>
        <label>
          Branch
          <input name="branch" list="branch-list" value="main" required />
          <datalist id="branch-list" />
        </label>
        <p class="actions">
          <button type="button" data-branches="branch-list">
            Load branches
          </button>
          <span class="muted" role="status" data-branches-status />
        </p>
        <label>
          Build command (optional; empty: detected on each deploy)
          <input name="build_command" placeholder="npm run build" data-optional />
        </label>
        <label>
          <input name="auto_deploy" type="checkbox" checked /> Deploy on every push
        </label>
        <button type="submit" class="primary">
          Connect repository
        </button>
      </ApiForm>
    </section>
  );
}

function Connected({ pod, config }: { pod: PodView; config: GitConfigView }) {
  return (
    <section class="grid">
      <div class="card">
        <h2>Repository</h2>
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            <code>{config.repo_url}</code>
          </dd>
          <dt>Branch</dt>
          <dd>{config.branch}</dd>
          <dt>On push</dt>
          <dd>{config.auto_deploy ? "deploys" : "does nothing (auto-deploy off)"}</dd>
          <dt>Build</dt>
          <dd>{config.build_command ? <code>{config.build_command}</code> : "detected on each deploy"}</dd>
          <dt>Push hook</dt>
          <dd>{config.webhook.auto ? "created at the git host" : (config.webhook.note ?? "none")}</dd>
        </dl>
        <div class="actions deploy-actions">
          <ApiForm action={`${api(pod)}/deploy`} then="reload">
            <button type="submit" class="primary">
              Deploy now
            </button>
          </ApiForm>
          <ApiForm
            action={api(pod)}
            method="DELETE"
            confirm={`Disconnect ${config.repo_url} from pod ${pod.name}? The deployed code and the history stay; the push hook goes.`}
          >
            <button type="submit" class="danger">
              Disconnect
            </button>
          </ApiForm>
        </div>
      </div>
      <div class="card" data-reveal-scope>
        <h2>Webhook</h2>
        <p class="muted">
          For a CI job or another git host: POST to this URL with the secret in X-Webhook-Secret.
        </p>
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            <code id="webhook-url">{config.webhook_url}</code>{" "}
            <button type="button" class="small" data-copy={config.webhook_url}>
              Copy
            </button>
          </dd>
          <dt>Secret</dt>
          <dd>
            <SecretSlot field="webhook_secret" id="webhook-secret" />{" "}
            <button type="button" class="small" data-reveal-from={`${api(pod)}/webhook-secret`}>
              Reveal secret
            </button>
            <button type="button" class="small" data-copy-from="#webhook-secret" data-after-reveal hidden>
              Copy
            </button>
          </dd>
        </dl>
        <p class="form-error" role="alert" data-reveal-error hidden />
      </div>
      <div class="card">
        <h2>Settings</h2>
        <ApiForm action={api(pod)} method="PUT" then="reload" success="Saved.">
          <label>
            Branch
            <input name="branch" value={config.branch} required />
          </label>
          <label>
            Build command (empty: detected)
            <input name="build_command" value={config.build_command} />
          </label>
          <label>
            <input name="auto_deploy" type="checkbox" checked={config.auto_deploy} /> Deploy on every push
          </label>
          <button type="submit">Save settings</button>
        </ApiForm>
      </div>
    </section>
  );
}

function BuildLog({ pod, shown }: { pod: PodView; shown: NonNullable<DeploysData["shown"]> }) {
  const base = `${api(pod)}/deployments/${encodeURIComponent(shown.id)}`;
  const live = shown.status === "deploying";
  return (
    <section id="build-log">
      <h2>
        Build log of <code>{shown.id}</code> <StatusBadge status={shown.status} />
      </h2>
      <p class="muted" id="build-log-status" role="status" aria-live="polite">
        {live ? (
          "Waiting for the build log…"
        ) : (
          <>
            Finished <Time iso={shown.finished_at} />
          </>
        )}
      </p>
      {live ? (
        <pre
          class="build-log"
          tabindex={0}
          data-log-url={`${base}/log`}
          data-deployment-url={base}
          data-log-status="build-log-status"
          data-refresh="#deploy-rows"
        />
      ) : (
        <pre class="build-log" tabindex={0}>
          {shown.build_log || "(empty)"}
        </pre>
      )}
    </section>
  );
}

export function DeploysPage({ page, pod, data }: { page: PageContext; pod: PodView; data: DeploysData }) {
  const path = api(pod);
  const calls: CurlCall[] = [
    { method: "GET", path, note: "The repository's configuration" },
    { method: "GET", path: `${path}/deployments?limit=20`, note: "The history" },
  ];
  if (!data.config) {
    calls.push(
      { method: "GET", path: `/api/repos/branches?repo_url=…`, note: "A repository's branches" },
      {
        method: "POST",
        path,
        body: { repo_url: "https://github.com/acme/site.git", branch: "main" },
        note: "Connect a repository",
      },
    );
  } else {
    calls.push(
      { method: "POST", path: `${path}/deploy`, note: "Deploy now" },
      { method: "POST", path: `${path}/rollback`, body: { deployment_id: "dep_…" }, note: "Roll back" },
      { method: "GET", path: `${path}/webhook-secret`, note: "The webhook's secret" },
    );
  }
  if (data.shown) {
    calls.push({
      method: "GET",
      path: `${path}/deployments/${data.shown.id}/log`,
      note: "The build log, streamed while it runs (add -N)",
    });
  }
  return (
    <PodPage page={page} pod={pod} tab="deploys" scripts={["pod-data.js"]}>
      {data.config ? <Connected pod={pod} config={data.config} /> : <ConnectForm pod={pod} />}
      <h2>History</h2>
      <DataTable
        label="Deploy history"
        columns={["Status", "Trigger", "Commit", "Started", "Took", "Log", { hidden: "Roll back" }]}
        class="deploys"
      >
        <DeployRows pod={pod} data={data} />
      </DataTable>
      {data.shown ? <BuildLog pod={pod} shown={data.shown} /> : null}
      <Curl base={page.base} calls={calls} />
    </PodPage>
  );
}
