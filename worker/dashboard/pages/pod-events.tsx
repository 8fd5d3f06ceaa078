import { AlertEventName, isTeamEvent } from "../../services/alerts/events";
import type { AlertEventsView } from "../../services/alerts/rules";
import { type EventsPage, POD_EVENT_TYPES } from "../../services/pods/events";
import type { PodView } from "../../services/pods/view";
import { AlertSwitch, alertsApi, podEventState } from "../components/alert-switch";
import { Curl } from "../components/curl";
import { DataTable, EmptyRow } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { PodPage, podPath } from "../components/pod-page";
import type { PageContext } from "../layout";

export const EVENTS_PAGE_SIZE = 50;

/** A pod's event history (`GET /api/pods/{name}/events`): newest first, filtered by type, paged. */
export function EventsTab({
  page,
  pod,
  list,
  type,
  alerts,
}: {
  page: PageContext;
  pod: PodView;
  list: EventsPage;
  type: string | undefined;
  /** the team's alert switches (owner only; null for a member) */
  alerts: AlertEventsView | null;
}) {
  const here = podPath(pod.name, "events");
  const typed = type ? `type=${encodeURIComponent(type)}&` : "";
  const types: readonly string[] = POD_EVENT_TYPES;
  return (
    <PodPage page={page} pod={pod} tab="events">
      <h2>Events</h2>
      <form method="get" action={here} class="filter-form">
        <label>
          Type
          <select name="type">
            <option value="" selected={!type}>
              All types
            </option>
            {type && !types.includes(type) ? (
              <option value={type} selected>
                {type}
              </option>
            ) : null}
            {types.map((t) => (
              <option value={t} selected={t === type}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      <DataTable label="Events" columns={["When", "Type", "What happened"]} class="events">
        <tbody>
          {list.events.length === 0 ? (
            <EmptyRow span={3}>{type ? `No ${type} events.` : "No events yet."}</EmptyRow>
          ) : (
            list.events.map((e) => (
              <tr>
                <td>
                  <Time iso={e.created_at} />
                </td>
                <td>
                  <code>{e.type}</code>
                </td>
                <td class="event-message">
                  {e.message}
                  {e.metadata ? (
                    <div>
                      <code class="muted">{e.metadata}</code>
                    </div>
                  ) : null}
                </td>
              </tr>
            ))
          )}
        </tbody>
      </DataTable>
      {list.total > list.limit || list.offset > 0 ? (
        <nav class="pager" aria-label="Pages">
          {list.offset > 0 ? (
            <a href={`${here}?${typed}offset=${Math.max(0, list.offset - list.limit)}`}>← Newer</a>
          ) : (
            <span />
          )}
          <span class="muted">
            {list.total === 0 ? 0 : Math.min(list.offset + 1, list.total)}–
            {Math.min(list.offset + list.limit, list.total)} of {list.total}
          </span>
          {list.offset + list.limit < list.total ? (
            <a href={`${here}?${typed}offset=${list.offset + list.limit}`}>Older →</a>
          ) : (
            <span />
          )}
        </nav>
      ) : null}
      <PodAlerts page={page} pod={pod} alerts={alerts} />
      <Curl
        base={page.base}
        calls={[
          {
            method: "GET",
            path: `/api/pods/${encodeURIComponent(pod.name)}/events?${typed}limit=${list.limit}&offset=${list.offset}`,
            note: "These events",
          },
          ...(alerts
            ? [
                {
                  method: "PUT",
                  path: `${alertsApi(page.caller.teamId)}/events`,
                  body: { event: "deploy_failed", enabled: false, pod: pod.name },
                  note: "Switch an alert off for this pod",
                },
              ]
            : []),
        ]}
      />
    </PodPage>
  );
}

/**
 * The pod's alert switches (docs/dashboard.md "Alerts"): every pod event of the service's list
 * (`AlertEventName`, so a new kind shows up here), on or off for this pod, and where that comes from.
 */
function PodAlerts({
  page,
  pod,
  alerts,
}: {
  page: PageContext;
  pod: PodView;
  alerts: AlertEventsView | null;
}) {
  return (
    <section class="card" id="alerts" aria-labelledby="pod-alerts-h">
      <h2 id="pod-alerts-h">Alerts for this pod</h2>
      {alerts ? (
        <>
          <p class="muted">
            The team's channels are told when one of these happens to {pod.name}.{" "}
            <a href="/app/team/alerts">Channels and team switches</a>
          </p>
          <DataTable label="Alerts for this pod" columns={["Event", "For this pod", { hidden: "Actions" }]}>
            <tbody>
              {AlertEventName.options
                .filter((event) => !isTeamEvent(event))
                .map((event) => {
                  const state = podEventState(alerts, pod.name, event);
                  return (
                    <AlertSwitch
                      teamId={page.caller.teamId}
                      event={event}
                      enabled={state.enabled}
                      source={state.source}
                      pod={pod.name}
                    />
                  );
                })}
            </tbody>
          </DataTable>
        </>
      ) : (
        <p class="muted">Only the team's owner sees and switches its alerts.</p>
      )}
    </section>
  );
}
