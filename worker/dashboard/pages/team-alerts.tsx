import type { listChannels, listDeliveries } from "../../services/alerts/channels";
import { AlertEventName, isTeamEvent } from "../../services/alerts/events";
import type { AlertEventsView } from "../../services/alerts/rules";
import type { TeamView } from "../../services/teams/teams";
import { AlertSwitch, alertsApi, eventLabel } from "../components/alert-switch";
import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { DataTable } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";

type Ok<T> = T extends { ok: true; value: infer V } ? V : never;
type Channels = Ok<Awaited<ReturnType<typeof listChannels>>>;
type Deliveries = Ok<Awaited<ReturnType<typeof listDeliveries>>>;

export const DELIVERIES_SHOWN = 50;

export interface AlertsData {
  channels: Channels;
  events: AlertEventsView;
  deliveries: Deliveries;
}

/**
 * Where a webhook or chat channel posts, without its path: a Slack or Discord incoming-webhook URL is
 * itself the credential, so the page never holds it whole (the API's channel list has it).
 */
const shownTarget = (url: string | null) => {
  if (!url) return "";
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/…`;
  } catch {
    return "…";
  }
};

const KIND_LABELS = { email: "E-mail", webhook: "Signed webhook", chat: "Slack / Discord" } as const;

/** The active team's alert channels, event switches and delivery history (owner only). */
export function TeamAlertsPage({
  page,
  team,
  data,
}: {
  page: PageContext;
  team: TeamView;
  data: AlertsData | null;
}) {
  const api = alertsApi(team.id);
  return (
    <Page page={page} section="team" title={`Alerts · ${team.name}`}>
      <p class="crumbs">
        <a href="/app/team">Team</a> /
      </p>
      <div class="page-head">
        <h1>Alerts</h1>
        <span class="muted">
          {team.name} · you are {team.role}
        </span>
      </div>
      {data ? (
        <AlertsBody teamId={team.id} data={data} />
      ) : (
        <p class="notice">Only the team's owner sees and changes its alerts.</p>
      )}
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: `${api}/channels`, note: "The channels" },
          {
            method: "POST",
            path: `${api}/channels`,
            body: { kind: "webhook", name: "ops", url: "https://hooks.example.com/podhost" },
            note: "Add a signed webhook (the answer carries its secret, once)",
          },
          {
            method: "POST",
            path: `${api}/channels`,
            body: { kind: "email", name: "everyone", roles: ["owner", "member"] },
            note: "Add e-mail to the members with these roles",
          },
          { method: "POST", path: `${api}/channels/ch_…/test`, note: "Send a test alert" },
          {
            method: "PATCH",
            path: `${api}/channels/ch_…`,
            body: { enabled: false },
            note: "Turn a channel off",
          },
          { method: "DELETE", path: `${api}/channels/ch_…`, note: "Remove a channel" },
          { method: "GET", path: `${api}/events`, note: "Which events alert" },
          {
            method: "PUT",
            path: `${api}/events`,
            body: { event: "deploy_failed", enabled: false },
            note: 'Switch an event for the team (add "pod" for one pod)',
          },
          {
            method: "GET",
            path: `${api}/deliveries?limit=${DELIVERIES_SHOWN}`,
            note: "The delivery history",
          },
        ]}
      />
    </Page>
  );
}

function AlertsBody({ teamId, data }: { teamId: string; data: AlertsData }) {
  const api = alertsApi(teamId);
  const channelName = new Map(data.channels.map((ch) => [ch.id, ch.name]));
  const teamEvents = AlertEventName.options;
  return (
    <>
      <h2>Channels</h2>
      {data.channels.length ? (
        <DataTable
          label="Alert channels"
          columns={["Channel", "Kind", "Goes to", "State", { hidden: "Actions" }]}
        >
          <tbody>
            {data.channels.map((ch) => {
              const one = `${api}/channels/${encodeURIComponent(ch.id)}`;
              return (
                <tr>
                  <th scope="row">{ch.name}</th>
                  <td>{KIND_LABELS[ch.kind]}</td>
                  <td>
                    {ch.kind === "email" ? `members: ${(ch.roles ?? []).join(", ")}` : shownTarget(ch.url)}
                  </td>
                  <td>
                    <span class={`badge ${ch.enabled ? "status-running" : "status-stopped"}`}>
                      {ch.enabled ? "on" : "off"}
                    </span>
                  </td>
                  <td class="actions">
                    <ApiForm action={`${one}/test`} then="reload" class="inline">
                      <button type="submit" class="small">
                        Send a test <span class="visually-hidden">to {ch.name}</span>
                      </button>
                    </ApiForm>
                    <ApiForm action={one} method="PATCH" class="inline">
                      <input type="hidden" name="enabled" value={ch.enabled ? "false" : "true"} data-json />
                      <button type="submit" class="small">
                        {ch.enabled ? "Turn off" : "Turn on"} <span class="visually-hidden">{ch.name}</span>
                      </button>
                    </ApiForm>
                    <ApiForm
                      action={one}
                      method="DELETE"
                      confirm={`Remove the channel ${ch.name}?`}
                      class="inline"
                    >
                      <button type="submit" class="small danger">
                        Remove <span class="visually-hidden">{ch.name}</span>
                      </button>
                    </ApiForm>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No channels yet: nothing is sent when something breaks.</p>
      )}

      <div class="grid">
        <section class="card" aria-labelledby="add-email-h">
          <h3 id="add-email-h">E-mail the team</h3>
          <ApiForm action={`${api}/channels`}>
            <input type="hidden" name="kind" value="email" />
            <label>
              Name
              <input name="name" required maxlength={100} value="E-mail" />
            </label>
            <label>
              Who gets it
              <select name="roles" data-json>
                <option value='["owner"]'>The owner</option>
                <option value='["owner","member"]'>Every member</option>
              </select>
            </label>
            <button type="submit">Add e-mail channel</button>
          </ApiForm>
        </section>
        <section class="card" aria-labelledby="add-webhook-h">
          <h3 id="add-webhook-h">Signed webhook</h3>
          <ApiForm action={`${api}/channels`} then="show:secret" success="Added.">
            <input type="hidden" name="kind" value="webhook" />
            <label>
              Name
              <input name="name" required maxlength={100} />
            </label>
            <label>
              URL
              <input
                name="url"
                type="url"
                required
                maxlength={2048}
                placeholder="https://hooks.example.com/podhost"
              />
            </label>
            <button type="submit">Add webhook</button>
            <div class="card reveal" data-result-box hidden>
              <p>
                The signing secret, shown this once: copy it now. <a href="/app/team/alerts">Done</a>
              </p>
              <pre>
                <code id="new-webhook-secret" data-result />
              </pre>
              <button type="button" data-copy-from="#new-webhook-secret">
                Copy secret
              </button>
            </div>
          </ApiForm>
        </section>
        <section class="card" aria-labelledby="add-chat-h">
          <h3 id="add-chat-h">Slack or Discord</h3>
          <ApiForm action={`${api}/channels`}>
            <input type="hidden" name="kind" value="chat" />
            <label>
              Name
              <input name="name" required maxlength={100} />
            </label>
            <label>
              Incoming-webhook URL
              <input
                name="url"
                type="url"
                required
                maxlength={2048}
                placeholder="https://hooks.slack.com/services/…"
              />
            </label>
            <button type="submit">Add Slack / Discord channel</button>
          </ApiForm>
        </section>
      </div>

      <h2>Events</h2>
      <p class="muted">
        Each is on unless switched off. A pod's own switch (on its Events tab) wins over the team's.
      </p>
      <DataTable label="Alert events for the team" columns={["Event", "For the team", { hidden: "Actions" }]}>
        <tbody>
          {teamEvents.map((event) => (
            <AlertSwitch
              teamId={teamId}
              event={event}
              enabled={data.events.events.find((e) => e.event === event)?.enabled ?? true}
              source={isTeamEvent(event) ? "a team event" : undefined}
            />
          ))}
        </tbody>
      </DataTable>
      {data.events.pods.length ? (
        <>
          <h3>Pods with their own switch</h3>
          <ul>
            {data.events.pods.map((p) => (
              <li>
                <a href={`/app/pods/${encodeURIComponent(p.pod)}/events#alerts`}>{p.pod}</a>:{" "}
                {eventLabel(p.event)} {p.enabled ? "on" : "off"}
              </li>
            ))}
          </ul>
        </>
      ) : null}

      <h2>Deliveries</h2>
      {data.deliveries.length ? (
        <DataTable
          label="Alert deliveries"
          columns={["When", "Channel", "Event", "Status", "HTTP", "Attempts", "Last error"]}
        >
          <tbody>
            {data.deliveries.map((d) => (
              <tr>
                <th scope="row">
                  <Time iso={d.created_at} />
                </th>
                <td>{channelName.get(d.channel_id) ?? d.channel_id}</td>
                <td>
                  {eventLabel(d.event)} <span class="muted">({d.state})</span>
                </td>
                <td>
                  <span
                    class={`badge ${d.status === "delivered" ? "status-running" : d.status === "failed" ? "status-error" : "status-creating"}`}
                  >
                    {d.status}
                  </span>
                </td>
                <td>{d.status_code ?? "—"}</td>
                <td>{d.attempts}</td>
                <td class="muted">{d.last_error ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No alerts sent yet.</p>
      )}
      <p class="muted">The newest {DELIVERIES_SHOWN}; the API's list goes to 200 (under API below).</p>
    </>
  );
}
