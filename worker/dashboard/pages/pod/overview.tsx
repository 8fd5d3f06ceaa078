import { dailyPrice, findPlan, NODE_VERSIONS, PLANS, type Plan } from "../../../../shared/catalog";
import type { Diagnosis } from "../../../../shared/protocol/health";
import type { MetricsView } from "../../../services/metrics/history";
import type { PodView } from "../../../services/pods/view";
import type { SshAccess } from "../../../services/ssh/access";
import { ApiForm } from "../../components/api-form";
import { Curl } from "../../components/curl";
import { STATUS_POLL } from "../../components/live";
import { podUrl, StatusBadge, Time } from "../../components/pod-bits";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";

export interface OverviewData {
  pod: PodView;
  ssh: SshAccess | { error: string };
  diagnosis: Diagnosis | null;
  metrics: MetricsView | null;
}

const money = (cents: number) => `$${(cents / 100).toFixed(2)}`;
const planLine = (p: Plan) =>
  `${p.name}: ${p.cpu} CPU, ${p.memoryMb % 1024 === 0 ? `${p.memoryMb / 1024} GB` : `${p.memoryMb} MB`} memory, ${p.diskGb} GB disk, ${money(p.monthlyPrice)}/month`;

const bytes = (n: number) => {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
};

const FIX_LABELS: Record<string, string> = {
  install_dependencies: "Install the dependencies and restart the app",
  add_start_script: "Add a start script to package.json and restart the app",
  forward_port: "Forward the preset's port to the port the app listens on",
};

/** The pod's app-health diagnosis from its host's last check, with the one-click fix when it has one. */
function Health({ name, diagnosis }: { name: string; diagnosis: Diagnosis | null }) {
  if (!diagnosis) {
    return (
      <section class="card" aria-labelledby="health-h">
        <h2 id="health-h">App health</h2>
        <p>
          <span class="badge status-running">healthy</span> The last health check found nothing wrong with the
          app.
        </p>
      </section>
    );
  }
  const action = `/api/pods/${encodeURIComponent(name)}/diagnosis/fix`;
  return (
    <section class="card diagnosis" aria-labelledby="health-h">
      <h2 id="health-h">App health</h2>
      <p>
        <span class="badge status-error">problem</span> <strong>{diagnosis.title}</strong>
      </p>
      <p class="pre-line">{diagnosis.detail}</p>
      <p>
        <strong>What to do:</strong> {diagnosis.fix}
      </p>
      <p class="muted">
        Diagnosis {diagnosis.class}, confidence {Math.round(diagnosis.confidence * 100)} %
      </p>
      {diagnosis.auto_fixable && diagnosis.fix_action ? (
        <ApiForm action={action} success="Fixed; the next health check looks again.">
          <button type="submit" class="primary">
            {FIX_LABELS[diagnosis.fix_action] ?? `Apply the fix (${diagnosis.fix_action})`}
          </button>
        </ApiForm>
      ) : null}
    </section>
  );
}

/** One action button that calls the public API (start, stop, restart, reload). */
function Action(props: { pod: string; verb: string; label: string; confirm?: string; success: string }) {
  return (
    <ApiForm
      action={`/api/pods/${encodeURIComponent(props.pod)}/${props.verb}`}
      confirm={props.confirm}
      success={props.success}
      class="inline"
    >
      <button type="submit">{props.label}</button>
    </ApiForm>
  );
}

/**
 * What the Overview shows of the pod's state (status, URL, plan and resources, the SSH command, app
 * health), kept live: the page polls `/app/pods/{name}/facts` every 1.5 s (routes/pod-overview.tsx)
 * and swaps this in again, as the pods list refreshes its rows.
 */
export function OverviewFacts({ page, data }: { page: PageContext; data: OverviewData }) {
  const { pod, ssh, diagnosis, metrics } = data;
  const plan = findPlan(pod.plan_slug);
  return (
    <>
      <div class="grid">
        <section class="card" aria-labelledby="facts-h">
          <h2 id="facts-h">Pod</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={pod.status} />
            </dd>
            <dt>URL</dt>
            <dd>
              <a href={podUrl(page.ctx.env, pod.domain)} rel="noopener" target="_blank">
                {podUrl(page.ctx.env, pod.domain)}
              </a>
            </dd>
            <dt>Preset</dt>
            <dd>{pod.preset}</dd>
            <dt>Region</dt>
            <dd>{pod.region}</dd>
            <dt>Server</dt>
            <dd>{pod.server_name || "not placed yet"}</dd>
            <dt>App root</dt>
            <dd>
              <code>{pod.app_root}</code>
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={pod.created_at} />
            </dd>
            {pod.description ? (
              <>
                <dt>Description</dt>
                <dd>{pod.description}</dd>
              </>
            ) : null}
          </dl>
        </section>
        <section class="card" aria-labelledby="plan-h">
          <h2 id="plan-h">Plan and resources</h2>
          <dl class="facts">
            <dt>Plan</dt>
            <dd>
              {plan?.name ?? pod.plan_slug}
              {plan ? ` · ${money(plan.monthlyPrice)}/month (${money(dailyPrice(plan))}/day)` : ""}
            </dd>
            <dt>CPU</dt>
            <dd>{pod.cpu}</dd>
            <dt>Memory</dt>
            <dd>{pod.memory}</dd>
            <dt>Disk</dt>
            <dd>{pod.disk}</dd>
            {metrics ? (
              <>
                <dt>Now</dt>
                <dd>
                  CPU {metrics.cpu_usage} %, memory {metrics.memory_usage} %, disk used{" "}
                  {bytes(metrics.storage_used)} (<Time iso={metrics.recorded_at} />)
                </dd>
              </>
            ) : null}
          </dl>
        </section>
      </div>

      <section class="card" aria-labelledby="ssh-h">
        <h2 id="ssh-h">SSH</h2>
        {"command" in ssh ? (
          <div class="copy-line">
            <label>
              SSH command
              <input id="ssh-command" type="text" readonly value={ssh.command} />
            </label>
            <button type="button" data-copy={ssh.command}>
              Copy SSH command
            </button>
          </div>
        ) : (
          <p class="muted">{ssh.error}</p>
        )}
        <p class="muted">
          Add your public key under Account → SSH keys, or to the pod's own keys with the API.
        </p>
      </section>

      <Health name={pod.name} diagnosis={diagnosis} />
    </>
  );
}

export function OverviewPage({ page, data }: { page: PageContext; data: OverviewData }) {
  const { pod, diagnosis } = data;
  const api = `/api/pods/${encodeURIComponent(pod.name)}`;
  const isNode = pod.preset === "nodejs";
  return (
    <PodPage page={page} pod={pod} tab="overview" scripts={["overview.js"]}>
      <div
        id="overview-facts"
        hx-get={`${podPath(pod.name)}/facts`}
        hx-trigger={STATUS_POLL}
        hx-swap="innerHTML"
        data-live-region
      >
        <OverviewFacts page={page} data={data} />
      </div>

      <section class="card" aria-labelledby="actions-h">
        <h2 id="actions-h">Actions</h2>
        <div class="actions">
          <Action pod={pod.name} verb="start" label="Start" success="Started." />
          <Action
            pod={pod.name}
            verb="stop"
            label="Stop"
            confirm={`Stop ${pod.name}? Its site answers no one until started again.`}
            success="Stopped."
          />
          <Action pod={pod.name} verb="restart" label="Restart" success="Restarted." />
          <Action
            pod={pod.name}
            verb="reload"
            label="Reload app (install dependencies, restart)"
            success="Reloaded."
          />
        </div>

        <div class="grid actions-grid">
          <ApiForm action={`${api}/resize`} success="Resized.">
            <label>
              Plan
              <select name="plan_slug">
                {PLANS.map((p) => (
                  <option value={p.slug} selected={p.slug === pod.plan_slug}>
                    {planLine(p)}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit">Resize</button>
          </ApiForm>

          <ApiForm action={`${api}/clone`} then="go:/app/pods/{name}">
            <label>
              Clone as (new pod name)
              <input
                name="new_name"
                required
                placeholder={`${pod.name}-copy`.slice(0, 40)}
                autocomplete="off"
              />
            </label>
            <button type="submit">Clone</button>
          </ApiForm>

          {isNode ? (
            <ApiForm
              action={`${api}/node-version`}
              method="PUT"
              then="none"
              success="Switched; the app restarted."
            >
              <label>
                Node.js version
                <select name="version">
                  {NODE_VERSIONS.map((v) => (
                    <option value={v}>Node.js {v}</option>
                  ))}
                </select>
              </label>
              <button type="submit">Switch Node.js version</button>
            </ApiForm>
          ) : null}
        </div>
      </section>

      <section class="card danger-zone" aria-labelledby="delete-h">
        <h2 id="delete-h">Delete this pod</h2>
        <p>
          Deleting removes the pod, its files and its databases. The name stays reserved for 7 days. This
          cannot be undone.
        </p>
        <ApiForm action={api} method="DELETE" then="go:/app">
          <label>
            Type <strong>{pod.name}</strong> to confirm
            <input name="confirm_name" data-must-equal={pod.name} data-path-only autocomplete="off" />
          </label>
          <button type="submit" class="danger" disabled>
            Delete {pod.name}
          </button>
        </ApiForm>
      </section>

      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: api, note: "The pod with its live status" },
          { method: "GET", path: `${api}/ssh`, note: "SSH access" },
          { method: "POST", path: `${api}/start`, note: "Start (also stop, restart)" },
          { method: "POST", path: `${api}/reload`, note: "Reload: install dependencies, restart the app" },
          { method: "POST", path: `${api}/resize`, body: { plan_slug: "build" }, note: "Resize" },
          {
            method: "POST",
            path: `${api}/clone`,
            body: { new_name: `${pod.name}-copy`.slice(0, 40) },
            note: "Clone",
          },
          ...(isNode
            ? [
                {
                  method: "PUT",
                  path: `${api}/node-version`,
                  body: { version: "22" },
                  note: "Switch Node.js",
                },
              ]
            : []),
          ...(diagnosis?.fix_action
            ? [{ method: "POST", path: `${api}/diagnosis/fix`, note: "Apply the diagnosis's fix" }]
            : []),
          { method: "DELETE", path: api, note: "Delete" },
        ]}
      />
    </PodPage>
  );
}
