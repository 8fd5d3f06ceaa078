import type { DomainView } from "../../services/domains/views";
import type { PodView } from "../../services/pods/view";
import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { StatusBadge, Time } from "../components/pod-bits";
import { PodPage } from "../components/pod-page";
import type { PageContext } from "../layout";

/** A value shown exactly as it must be typed, with a copy button. */
function Copyable({ label, value }: { label: string; value: string }) {
  return (
    <div class="copyable">
      <span class="muted">{label}</span>
      <code>{value}</code>
      <button type="button" class="small" data-copy={value} aria-label={`Copy ${label.toLowerCase()}`}>
        Copy
      </button>
    </div>
  );
}

function DomainCard({ api, domain }: { api: string; domain: DomainView }) {
  const one = `${api}/${encodeURIComponent(domain.id)}`;
  return (
    <li class="card domain">
      <div class="page-head">
        <h3>{domain.domain}</h3>
        <StatusBadge status={domain.status} />
      </div>
      {domain.status === "verified" ? (
        <p>
          Verified <Time iso={domain.verified_at} />: the pod answers at this name.
        </p>
      ) : (
        <>
          <p>Create this TXT record at your DNS provider, then verify:</p>
          <div class="txt-record">
            <Copyable label="Type" value={domain.verification.type} />
            <Copyable label="Name" value={domain.verification.name} />
            <Copyable label="Value" value={domain.verification.value} />
          </div>
        </>
      )}
      <div class="actions">
        {domain.status === "verified" ? null : (
          <ApiForm action={`${one}/verify`} success="Verified.">
            <button type="submit" class="primary">
              Verify {domain.domain}
            </button>
          </ApiForm>
        )}
        <ApiForm
          action={one}
          method="DELETE"
          confirm={
            domain.status === "verified"
              ? `Remove ${domain.domain}? The pod stops answering at it.`
              : `Remove ${domain.domain}?`
          }
        >
          <button type="submit" class="danger">
            Remove {domain.domain}
          </button>
        </ApiForm>
      </div>
    </li>
  );
}

/** A pod's custom domains (docs/domains.md): add, the TXT record to publish, verify, remove. */
export function DomainsTab({
  page,
  pod,
  domains,
}: {
  page: PageContext;
  pod: PodView;
  domains: DomainView[];
}) {
  const api = `/api/pods/${encodeURIComponent(pod.name)}/domains`;
  const first = domains[0];
  return (
    <PodPage page={page} pod={pod} tab="domains">
      <h2>Custom domains</h2>
      <p class="muted">
        Add a host name you own, publish the TXT record shown for it, and point the name at the pod (a CNAME
        to <code>{pod.domain}</code>); then verify. The first pod to verify a name owns it.
      </p>
      <ApiForm action={api} class="card add-domain" success="Added.">
        <label>
          Domain
          <input name="domain" required maxlength={253} placeholder="www.example.com" autocomplete="off" />
        </label>
        <button type="submit" class="primary">
          Add domain
        </button>
      </ApiForm>
      {domains.length === 0 ? (
        <p class="empty-note">No custom domains yet.</p>
      ) : (
        <ul class="domain-list">
          {domains.map((d) => (
            <DomainCard api={api} domain={d} />
          ))}
        </ul>
      )}
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: api, note: "This list" },
          { method: "POST", path: api, body: { domain: "www.example.com" }, note: "Add a domain" },
          ...(first
            ? [
                { method: "POST", path: `${api}/${first.id}/verify`, note: `Verify ${first.domain}` },
                { method: "DELETE", path: `${api}/${first.id}`, note: `Remove ${first.domain}` },
              ]
            : []),
        ]}
      />
    </PodPage>
  );
}
