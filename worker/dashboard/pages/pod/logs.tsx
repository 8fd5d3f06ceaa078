import { LOG_SOURCES, type LogSource } from "../../../../shared/protocol/inside";
import type { PodView } from "../../../services/pods/view";
import { Curl } from "../../components/curl";
import { JsonBlock } from "../../components/json-block";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";

/** how many lines the live tail starts with */
export const LOGS_START_LINES = 200;
/** how many lines (or matches) a read of the history shows: the API's most */
export const LOG_HISTORY_LINES = 1000;

/** a range field as the picker sends it (`2026-11-27T12:00`, UTC), else as typed, bounded; "" when empty */
export const rangeField = (value: string | undefined) => (value ?? "").trim().slice(0, 40);

/** the picker's minutes-only UTC time as the API's ISO 8601; anything else goes as typed (the API judges it) */
export const asUtc = (value: string) =>
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(value)
    ? `${value}:00Z`
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(value)
      ? `${value}Z`
      : value;

export type HistoryRead = { ok: true; lines: string[]; truncated: boolean } | { ok: false; error: string };

export interface LogsData {
  pod: PodView;
  source: LogSource;
  grep: string;
  /** a stopped pod's last lines, read once (no live tail); undefined for a running pod */
  still?: { ok: true; lines: string[] } | { ok: false; error: string };
  /** the history's range asked for (the picker's fields, UTC), and what reading it answered */
  range?: { since: string; until: string };
  history?: HistoryRead;
}

/**
 * The Logs tab: a live tail of `GET /api/pods/{name}/logs?follow=true` (server-sent events) read by
 * logs.client.js into a ring buffer, with the source and the PCRE2 filter as a plain GET form (the
 * page renders again with them, and the stream asks the API for them). A stopped pod shows its last
 * lines, read once through the API's own verb.
 */
export function LogsPage({ page, data }: { page: PageContext; data: LogsData }) {
  const { pod, source, grep, range, history } = data;
  const api = `/api/pods/${encodeURIComponent(pod.name)}/logs`;
  const query = new URLSearchParams({ source, lines: String(LOGS_START_LINES) });
  if (grep) query.set("grep", grep);
  const follow = `${api}?follow=true&${query}`;
  const ranged = new URLSearchParams({ source, lines: String(LOG_HISTORY_LINES) });
  if (grep) ranged.set("grep", grep);
  if (range?.since) ranged.set("since", asUtc(range.since));
  if (range?.until) ranged.set("until", asUtc(range.until));
  // what the page shows once, not live: a range of the history, or a stopped pod's last lines
  const once = history ?? data.still;
  const live = new URLSearchParams({ source });
  if (grep) live.set("grep", grep);
  return (
    <PodPage page={page} pod={pod} tab="logs" scripts={["logs.js"]}>
      <h2>Logs</h2>
      <form method="get" action={podPath(pod.name, "logs")} class="filter-form logs-filter">
        <label>
          Source
          <select name="source">
            {LOG_SOURCES.map((s) => (
              <option value={s} selected={s === source}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Filter (PCRE2; all lowercase matches any case)
          <input type="search" name="grep" value={grep} maxlength={1000} placeholder="error|warn" />
        </label>
        <fieldset class="logs-range">
          <legend>History (app, web and error logs; times in UTC; empty for the live tail)</legend>
          <label>
            From (UTC)
            <input type="datetime-local" name="since" value={range?.since ?? ""} step={60} />
          </label>
          <label>
            To (UTC; empty: now)
            <input type="datetime-local" name="until" value={range?.until ?? ""} step={60} />
          </label>
        </fieldset>
        <button type="submit">Apply</button>
        {range ? <a href={`${podPath(pod.name, "logs")}?${live}`}>Back to the live tail</a> : null}
      </form>
      <section
        class="card logs-view"
        aria-labelledby="logs-h"
        data-logs-stream={once ? undefined : follow}
        data-logs-name={`${pod.name}-${source}.log`}
      >
        <div class="logs-bar">
          <h3 id="logs-h">
            {source}.log{grep ? ` matching ${grep}` : ""}
          </h3>
          <p class="logs-status" role="status" data-logs-status>
            {history
              ? historyStatus(range, history, grep !== "")
              : data.still
                ? "The pod is not running: these are its last lines, not a live tail."
                : "Connecting…"}
          </p>
          <button type="button" data-logs-pause aria-pressed="false" disabled={!!once}>
            Pause
          </button>
          <button type="button" data-logs-download>
            Download shown lines
          </button>
          <button type="button" data-logs-clear>
            Clear
          </button>
        </div>
        {once && !once.ok ? (
          <p class="error" role="alert">
            {once.error}
          </p>
        ) : null}
        <div
          class="logs-lines"
          data-logs-lines
          role="log"
          aria-live="off"
          tabindex={0}
          aria-label={`Lines of ${source}.log`}
        />
        <JsonBlock id="logs-initial" value={once?.ok ? once.lines : []} />
      </section>
      <Curl
        base={page.base}
        calls={[
          ...(range
            ? [
                {
                  method: "GET",
                  path: `${api}?${ranged}`,
                  note: "Read this range of the log's history (up to 1,000 lines or matches, newest first when filtered)",
                },
              ]
            : []),
          { method: "GET", path: follow, note: "Follow the log (server-sent events; curl -N)" },
          { method: "GET", path: `${api}?${query}`, note: "Read its last lines once" },
        ]}
      />
    </PodPage>
  );
}

function historyStatus(range: LogsData["range"], history: HistoryRead, filtered: boolean): string {
  const span = `from ${range?.since ? `${range.since} UTC` : "a day before"} to ${range?.until ? `${range.until} UTC` : "now"}`;
  if (!history.ok) return `History ${span}: not read.`;
  const count = `${history.lines.length} ${filtered ? "matching lines" : "lines"}`;
  const cut = history.truncated
    ? " A bound cut the search short: older lines of the range were not searched."
    : "";
  const none = history.lines.length === 0 ? " Nothing was kept in this range." : "";
  return `History ${span}: ${count} (the last ${LOG_HISTORY_LINES} at most), not a live tail.${none}${cut}`;
}
