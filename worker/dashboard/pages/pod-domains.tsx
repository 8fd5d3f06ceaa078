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

const FAILED = "failed: ";

/**
 * A verified domain's certificate at the edge (`tls_status`, docs/domains.md "TLS"): a badge and
 * what to do about it. A failed validation gets the reason and a button that restarts it (`POST
 * …/verify`, which restarts a failed validation at Cloudflare).
 */
function TlsState({ domain, podDomain, verify }: { domain: DomainView; podDomain: string; verify: string }) {
  const tls = domain.tls_status ?? "pending";
  if (tls === "active")
    return (
      <p class="tls">
        <span class="badge status-success">HTTPS active</span> Its certificate is issued: the edge serves{" "}
        {domain.domain} over HTTPS.
      </p>
    );
  if (tls === "not_configured")
    return (
      <p class="tls">
        <span class="badge status-stopped">HTTPS not configured</span> This service issues no certificates
        (its operator has not set Cloudflare for SaaS up): the name is served, but not over HTTPS from here.
      </p>
    );
  if (tls.startsWith(FAILED))
    return (
      <div class="tls">
        <p>
          <span class="badge status-failed">HTTPS failed</span> Its certificate was not issued:{" "}
          <strong>{tls.slice(FAILED.length)}</strong>
        </p>
        <p class="muted">
          Check that {domain.domain} is a CNAME to <code>{podDomain}</code> and that no CAA record forbids the
          certificate authority, then restart the validation.
        </p>
        <ApiForm action={verify} success="Validation restarted.">
          <button type="submit">Restart certificate validation</button>
        </ApiForm>
      </div>
    );
  return (
    <div class="tls">
      <p>
        <span class="badge status-pending">HTTPS pending</span> Its certificate is being issued; this takes a
        few minutes once {domain.domain} is a CNAME to <code>{podDomain}</code>.
      </p>
      <ApiForm action={verify} success="Looked again.">
        <button type="submit" class="small">
          Check now
        </button>
      </ApiForm>
    </div>
  );
}

function DomainCard({ api, domain, podDomain }: { api: string; domain: DomainView; podDomain: string }) {
  const one = `${api}/${encodeURIComponent(domain.id)}`;
  return (
    <li class="card domain">
      <div class="page-head">
        <h3>{domain.domain}</h3>
        <StatusBadge status={domain.status} />
      </div>
      {domain.status === "verified" ? (
        <>
          <p>
            Verified <Time iso={domain.verified_at} />: the pod answers at this name.
          </p>
          <TlsState domain={domain} podDomain={podDomain} verify={`${one}/verify`} />
        </>
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
            <DomainCard api={api} domain={d} podDomain={pod.domain} />
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
