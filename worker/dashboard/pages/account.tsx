import type { ApiTokenView } from "../../services/api-tokens/api-tokens";
import type { ConnectorView } from "../../services/connectors/grants";
import type { SshKeyView } from "../../services/ssh-keys/ssh-keys";
import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { DataTable } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";

interface AccountPageProps {
  page: PageContext;
  tokens: ApiTokenView[];
  keys: SshKeyView[];
  connectors: ConnectorView[];
}

/** The account: who you are, API tokens, SSH keys, and the apps connected to it (OAuth grants). */
export function AccountPage({ page, tokens, keys, connectors }: AccountPageProps) {
  const { user } = page.caller;
  const teamName = (id: string) => page.teams.find((t) => t.id === id)?.name ?? id;
  return (
    <Page page={page} section="account" title="Account">
      <h1>Account</h1>
      <dl class="facts card">
        <dt>Name</dt>
        <dd>{user.name}</dd>
        <dt>E-mail</dt>
        <dd>
          {user.email}{" "}
          {user.email_verified ? <span class="badge status-verified">verified</span> : "(not verified)"}
        </dd>
        <dt>Since</dt>
        <dd>
          <Time iso={user.created_at} />
        </dd>
      </dl>

      <h2 id="tokens">API tokens</h2>
      <p class="muted">
        A token acts on the team that is active when it is made ({teamName(page.caller.teamId)} now), for the
        CLI, CI and scripts. Its value is shown once.
      </p>
      <section class="card">
        <ApiForm action="/api/api-tokens" then="show:token">
          <div class="grid">
            <label>
              Name
              <input name="name" required maxlength={100} placeholder="CI deploys" />
            </label>
            <label>
              Expires after (days, empty: never)
              <input name="expires_in_days" type="number" min={1} max={3650} />
            </label>
          </div>
          <button type="submit" class="primary">
            Create token
          </button>
          <div class="card reveal" data-result-box hidden>
            <p>Copy it now: it is not shown again.</p>
            <pre>
              <code id="new-token" data-result />
            </pre>
            <button type="button" data-copy-from="#new-token">
              Copy
            </button>
          </div>
        </ApiForm>
      </section>
      {tokens.length ? (
        <DataTable
          label="API tokens"
          columns={["Name", "Token", "Team", "Last used", "Expires", { hidden: "Actions" }]}
        >
          <tbody>
            {tokens.map((t) => (
              <tr>
                <th scope="row">{t.name}</th>
                <td>
                  <code>{t.prefix}…</code>
                </td>
                <td>{teamName(t.team_id)}</td>
                <td>
                  <Time iso={t.last_used_at} />
                </td>
                <td>{t.expires_at ? <Time iso={t.expires_at} /> : "never"}</td>
                <td>
                  <ApiForm
                    action={`/api/api-tokens/${encodeURIComponent(t.id)}`}
                    method="DELETE"
                    confirm={`Revoke the token ${t.name}? Whatever uses it stops working.`}
                    class="inline"
                  >
                    <button type="submit" class="small danger">
                      Revoke
                    </button>
                  </ApiForm>
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No API tokens.</p>
      )}

      <h2 id="ssh-keys">SSH keys</h2>
      <p class="muted">Keys with auto-inject are added to every new pod's SSH access.</p>
      <section class="card">
        <ApiForm action="/api/ssh-keys">
          <label>
            Public key
            <textarea
              name="public_key"
              required
              maxlength={16384}
              placeholder="ssh-ed25519 AAAA… you@laptop"
            />
          </label>
          <label>
            Name (default: the key's comment)
            <input name="name" maxlength={100} data-optional />
          </label>
          <label>
            <input name="auto_inject" type="checkbox" /> Add to every new pod
          </label>
          <button type="submit" class="primary">
            Add key
          </button>
        </ApiForm>
      </section>
      {keys.length ? (
        <DataTable
          label="SSH keys"
          columns={["Name", "Fingerprint", "Auto-inject", "Added", { hidden: "Actions" }]}
        >
          <tbody>
            {keys.map((k) => {
              const path = `/api/ssh-keys/${encodeURIComponent(k.id)}`;
              return (
                <tr>
                  <th scope="row">{k.name}</th>
                  <td>
                    <code>{k.fingerprint}</code>
                  </td>
                  <td>
                    <ApiForm action={path} method="PUT" class="inline">
                      <input
                        type="hidden"
                        name="auto_inject"
                        value={k.auto_inject ? "false" : "true"}
                        data-json
                      />
                      <button type="submit" class="small">
                        {k.auto_inject ? "On: turn off" : "Off: turn on"}
                      </button>
                    </ApiForm>
                  </td>
                  <td>
                    <Time iso={k.created_at} />
                  </td>
                  <td>
                    <ApiForm
                      action={path}
                      method="DELETE"
                      confirm={`Delete the key ${k.name}?`}
                      class="inline"
                    >
                      <button type="submit" class="small danger">
                        Delete
                      </button>
                    </ApiForm>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No SSH keys.</p>
      )}

      <h2 id="connected-apps">Connected apps</h2>
      <p class="muted">
        Assistants and tools you allowed to act on a team (OAuth). Revoking one ends its access now.
      </p>
      {connectors.length ? (
        <DataTable
          label="Connected apps"
          columns={["App", "Redirects to", "Team", "Last used", { hidden: "Actions" }]}
        >
          <tbody>
            {connectors.map((g) => (
              <tr>
                <th scope="row">{g.client_name}</th>
                <td>{g.redirect_host}</td>
                <td>{g.team_name}</td>
                <td>
                  <Time iso={g.last_used_at} />
                </td>
                <td>
                  <ApiForm
                    action={`/api/connectors/${encodeURIComponent(g.id)}`}
                    method="DELETE"
                    confirm={`Disconnect ${g.client_name}?`}
                    class="inline"
                  >
                    <button type="submit" class="small danger">
                      Revoke
                    </button>
                  </ApiForm>
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No connected apps.</p>
      )}

      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: "/api/auth/user", note: "Who you are" },
          { method: "GET", path: "/api/api-tokens", note: "API tokens (with a session, not a token)" },
          { method: "POST", path: "/api/api-tokens", body: { name: "CI deploys" }, note: "A new token" },
          { method: "GET", path: "/api/ssh-keys", note: "SSH keys" },
          { method: "GET", path: "/api/connectors", note: "Connected apps" },
        ]}
      />
    </Page>
  );
}
