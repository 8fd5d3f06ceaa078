import { LOG_SOURCES, type LogSource } from "../../../../shared/protocol/inside";
import type { PodView } from "../../../services/pods/view";
import { Curl } from "../../components/curl";
import { JsonBlock } from "../../components/json-block";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";

/** how many lines the live tail starts with */
export const LOGS_START_LINES = 200;

export interface LogsData {
  pod: PodView;
  source: LogSource;
  grep: string;
  /** a stopped pod's last lines, read once (no live tail); undefined for a running pod */
  still?: { ok: true; lines: string[] } | { ok: false; error: string };
}

/**
 * The Logs tab: a live tail of `GET /api/pods/{name}/logs?follow=true` (server-sent events) read by
 * logs.client.js into a ring buffer, with the source and the PCRE2 filter as a plain GET form (the
 * page renders again with them, and the stream asks the API for them). A stopped pod shows its last
 * lines, read once through the API's own verb.
 */
export function LogsPage({ page, data }: { page: PageContext; data: LogsData }) {
  const { pod, source, grep } = data;
  const api = `/api/pods/${encodeURIComponent(pod.name)}/logs`;
  const query = new URLSearchParams({ source, lines: String(LOGS_START_LINES) });
  if (grep) query.set("grep", grep);
  const follow = `${api}?follow=true&${query}`;
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
        <button type="submit">Apply</button>
      </form>
      <section
        class="card logs-view"
        aria-labelledby="logs-h"
        data-logs-stream={data.still ? undefined : follow}
        data-logs-name={`${pod.name}-${source}.log`}
      >
        <div class="logs-bar">
          <h3 id="logs-h">
            {source}.log{grep ? ` matching ${grep}` : ""}
          </h3>
          <p class="logs-status" role="status" data-logs-status>
            {data.still
              ? "The pod is not running: these are its last lines, not a live tail."
              : "Connecting…"}
          </p>
          <button type="button" data-logs-pause aria-pressed="false" disabled={!!data.still}>
            Pause
          </button>
          <button type="button" data-logs-download>
            Download shown lines
          </button>
          <button type="button" data-logs-clear>
            Clear
          </button>
        </div>
        {data.still && !data.still.ok ? <p class="error">{data.still.error}</p> : null}
        <div
          class="logs-lines"
          data-logs-lines
          role="log"
          aria-live="off"
          tabindex={0}
          aria-label={`Lines of ${source}.log`}
        />
        <JsonBlock id="logs-initial" value={data.still?.ok ? data.still.lines : []} />
      </section>
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: follow, note: "Follow the log (server-sent events; curl -N)" },
          { method: "GET", path: `${api}?${query}`, note: "Read its last lines once" },
        ]}
      />
    </PodPage>
  );
}
