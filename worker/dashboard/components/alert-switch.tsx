import type { AlertEventsView } from "../../services/alerts/rules";
import { ApiForm } from "./api-form";

/** "deploy_failed" → "Deploy failed": an event's name as the page says it (the API's name beside it). */
export const eventLabel = (event: string) => {
  const words = event.replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
};

export const alertsApi = (teamId: string) => `/api/teams/${encodeURIComponent(teamId)}/alerts`;

/**
 * One event's switch: its state in words, and a button that PUTs the opposite through the public API
 * (`PUT /api/teams/{id}/alerts/events`), for the team or, with `pod`, for that pod only.
 */
export function AlertSwitch(props: {
  teamId: string;
  event: string;
  enabled: boolean;
  pod?: string;
  /** where the state comes from, e.g. "this pod" or "the team's" */
  source?: string;
}) {
  const { event, enabled, pod } = props;
  const scope = pod ? "for this pod" : "for the team";
  return (
    <tr>
      <th scope="row">
        {eventLabel(event)} <code class="muted">{event}</code>
      </th>
      <td>
        <span class={`badge ${enabled ? "status-running" : "status-stopped"}`}>{enabled ? "on" : "off"}</span>
        {props.source ? <span class="muted"> ({props.source})</span> : null}
      </td>
      <td class="actions">
        <ApiForm action={`${alertsApi(props.teamId)}/events`} method="PUT" class="inline">
          <input type="hidden" name="event" value={event} />
          <input type="hidden" name="enabled" value={enabled ? "false" : "true"} data-json />
          {pod ? <input type="hidden" name="pod" value={pod} /> : null}
          <button type="submit" class="small">
            {enabled ? "Turn off" : "Turn on"}{" "}
            <span class="visually-hidden">{`${eventLabel(event)} alerts ${scope}`}</span>
          </button>
        </ApiForm>
      </td>
    </tr>
  );
}

/** A pod event's state for one pod: the pod's own rule, else the team's, else on. */
export function podEventState(view: AlertEventsView, pod: string, event: string) {
  const own = view.pods.find((p) => p.pod === pod && p.event === event);
  if (own) return { enabled: own.enabled, source: "this pod's switch" };
  const team = view.events.find((e) => e.event === event);
  return { enabled: team?.enabled ?? true, source: "as the team's" };
}
