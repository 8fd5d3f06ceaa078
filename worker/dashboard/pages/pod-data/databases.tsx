import type { Plan } from "../../../../shared/catalog";
import type { PodView } from "../../../services/pods/view";
import type { ServiceView } from "../../../services/services/views";
import { ApiForm } from "../../components/api-form";
import { Curl, type CurlCall } from "../../components/curl";
import { DataTable, EmptyRow } from "../../components/data-table";
import { StatusBadge } from "../../components/pod-bits";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";
import { SecretSlot } from "./bits";

const TYPES = [
  ["postgresql", "PostgreSQL"],
  ["mysql", "MySQL (MariaDB)"],
  ["redis", "Redis"],
] as const;

const label = (type: string) => TYPES.find(([t]) => t === type)?.[1] ?? type;

/**
 * The connection string of a service, as a template pod-data.js fills with the credentials once they
 * are revealed (`{password|url}`: URL-encoded, since a password may hold any character).
 */
const CONNECTION: Record<string, string> = {
  postgresql: "postgresql://{username|url}:{password|url}@{host}:{port}/{database|url}",
  mysql: "mysql://{username|url}:{password|url}@{host}:{port}/{database|url}",
  redis: "redis://:{password|url}@{host}:{port}",
};

const api = (pod: Pick<PodView, "name">) => `/api/pods/${pod.name}/services`;

/** The services' rows, also served alone for htmx: their status stays live (2 s poll). */
export function ServiceRows({ pod, services }: { pod: Pick<PodView, "name">; services: ServiceView[] }) {
  return (
    <tbody
      id="service-rows"
      hx-get={`${podPath(pod.name, "databases")}/rows`}
      hx-trigger="every 2s, refresh"
      hx-swap="outerHTML"
    >
      {services.length === 0 ? (
        <EmptyRow span={4}>No database services yet.</EmptyRow>
      ) : (
        services.map((s) => (
          <tr>
            <th scope="row">{label(s.service_type)}</th>
            <td>
              <StatusBadge status={s.status} />
              {s.error_msg ? <span class="failure">{s.error_msg}</span> : null}
            </td>
            <td>{s.version || <span class="muted">—</span>}</td>
            <td>
              <code>
                {s.host}:{s.port}
              </code>
            </td>
          </tr>
        ))
      )}
    </tbody>
  );
}

function ServiceCard({ pod, service }: { pod: PodView; service: ServiceView }) {
  const type = service.service_type;
  const sql = type !== "redis";
  const masked = CONNECTION[type]
    ?.replace("{password|url}", "••••••")
    .replace(/\{username\|url\}|\{database\|url\}/g, "pod_user")
    .replace("{host}", service.host)
    .replace("{port}", String(service.port));
  return (
    <div class="card" data-reveal-scope>
      <h3>{label(type)}</h3>
      <dl class="facts">
        <dt>Host</dt>
        <dd>
          <code>{service.host}</code> (inside the pod)
        </dd>
        <dt>Port</dt>
        <dd>
          <code>{service.port}</code>
        </dd>
        {sql ? (
          <>
            <dt>User</dt>
            <dd>
              <code>pod_user</code>
            </dd>
            <dt>Database</dt>
            <dd>
              <code>pod_user</code>
            </dd>
          </>
        ) : null}
        <dt>Password</dt>
        <dd>
          <SecretSlot field="password" id={`password-${type}`} />
        </dd>
        <dt>Connection string</dt>
        <dd>
          <code id={`connection-${type}`} data-template={CONNECTION[type]}>
            {masked}
          </code>
        </dd>
      </dl>
      <div class="actions">
        <button type="button" data-reveal-from={`${api(pod)}/${type}/credentials`}>
          Reveal credentials
        </button>
        <button type="button" data-copy-from={`#connection-${type}`} data-after-reveal hidden>
          Copy connection string
        </button>
        <button type="button" data-copy-from={`#password-${type}`} data-after-reveal hidden>
          Copy password
        </button>
        <ApiForm
          action={`${api(pod)}/${type}`}
          method="DELETE"
          confirm={`Remove ${label(type)} from pod ${pod.name}? Its server and ALL ITS DATA are deleted.`}
        >
          <button type="submit" class="danger">
            Remove {label(type)}
          </button>
        </ApiForm>
      </div>
      <p class="form-error" role="alert" data-reveal-error hidden />
    </div>
  );
}

export function DatabasesPage({
  page,
  pod,
  plan,
  services,
}: {
  page: PageContext;
  pod: PodView;
  plan: Plan | undefined;
  services: ServiceView[];
}) {
  const allowed = plan?.databaseServices === true;
  const installed = new Set(services.map((s) => s.service_type));
  const free = TYPES.filter(([t]) => !installed.has(t));
  const path = api(pod);
  const calls: CurlCall[] = [
    { method: "GET", path, note: "The pod's database services" },
    { method: "POST", path, body: { service_type: "postgresql" }, note: "Install one" },
    { method: "GET", path: `${path}/postgresql/credentials`, note: "Its credentials" },
    { method: "DELETE", path: `${path}/postgresql`, note: "Remove it and its data" },
  ];
  return (
    <PodPage page={page} pod={pod} tab="databases" scripts={["pod-data.js"]}>
      <p class="muted">
        Plan {plan?.name ?? pod.plan_slug}:{" "}
        {allowed
          ? "PostgreSQL, MySQL and Redis, one of each, inside the pod (the app reaches them at 127.0.0.1)."
          : "no database services. They come with the Build plan or higher (resize the pod on its Overview tab)."}
      </p>
      {/* focusable: at 390 px the table scrolls in its box, and a keyboard must reach it */}
      <DataTable
        label="Database services"
        columns={["Service", "Status", "Version", "Address"]}
        class="services"
      >
        <ServiceRows pod={pod} services={services} />
      </DataTable>
      {allowed && free.length > 0 ? (
        <ApiForm action={path} then="reload" class="card install-service">
          <label>
            Database to install
            <select name="service_type">
              {free.map(([value, text]) => (
                <option value={value}>{text}</option>
              ))}
            </select>
          </label>
          <button type="submit" class="primary">
            Install database
          </button>
        </ApiForm>
      ) : null}
      {services.length ? <h2>Credentials</h2> : null}
      <div class="grid">
        {services.map((s) => (
          <ServiceCard pod={pod} service={s} />
        ))}
      </div>
      <Curl base={page.base} calls={calls} />
    </PodPage>
  );
}
