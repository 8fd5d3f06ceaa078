import type { MetricsView } from "../../../services/metrics/history";
import type { PodView } from "../../../services/pods/view";
import { Curl } from "../../components/curl";
import { JsonBlock } from "../../components/json-block";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";

export const METRICS_RANGES = [
  ["1h", "1 hour", 1],
  ["24h", "24 hours", 24],
  ["30d", "30 days", 720],
] as const;

export type MetricsRange = (typeof METRICS_RANGES)[number][0];

export interface MetricsData {
  pod: PodView;
  range: MetricsRange;
  hours: number;
  history: MetricsView[];
}

/**
 * The Metrics tab: CPU, memory, disk and network charts (uPlot, metrics.client.js) over 1 hour,
 * 24 hours or 30 days of the metrics history, the points handed to the script in a JSON block of
 * the page itself (columns: seconds, cpu %, memory %, disk bytes, bytes in, bytes out).
 */
export function MetricsPage({ page, data }: { page: PageContext; data: MetricsData }) {
  const { pod, range, hours, history } = data;
  const here = podPath(pod.name, "metrics");
  const columns = [
    history.map((m) => Math.floor(Date.parse(m.recorded_at) / 1000)),
    history.map((m) => m.cpu_usage),
    history.map((m) => m.memory_usage),
    history.map((m) => m.storage_used),
    history.map((m) => m.network_in),
    history.map((m) => m.network_out),
  ];
  const last = history.at(-1);
  return (
    <PodPage page={page} pod={pod} tab="metrics" scripts={["uplot.js", "metrics.js"]} styles={["uplot.css"]}>
      <h2>Metrics</h2>
      <nav class="range-switch" aria-label="Time range">
        {METRICS_RANGES.map(([key, label]) => (
          <a href={`${here}?range=${key}`} aria-current={key === range ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {history.length === 0 ? (
        <p class="muted">
          No samples in this range yet: the host reports each running pod's usage every minute.
        </p>
      ) : (
        <p class="muted">
          {history.length} samples{hours > 24 ? " (one per hour)" : ""}; the latest: CPU {last?.cpu_usage}%,
          memory {last?.memory_usage}%.
        </p>
      )}
      <div class="metrics-charts" data-metrics-charts>
        <figure class="metrics-chart" data-chart="cpu">
          <figcaption>CPU (% of the plan)</figcaption>
        </figure>
        <figure class="metrics-chart" data-chart="memory">
          <figcaption>Memory (% of the plan)</figcaption>
        </figure>
        <figure class="metrics-chart" data-chart="disk">
          <figcaption>Disk used (bytes)</figcaption>
        </figure>
        <figure class="metrics-chart" data-chart="network">
          <figcaption>Network (bytes in and out per sample)</figcaption>
        </figure>
      </div>
      <JsonBlock id="metrics-data" value={{ range, columns }} />
      <Curl
        base={page.base}
        calls={[
          {
            method: "GET",
            path: `/api/pods/${encodeURIComponent(pod.name)}/metrics/history?hours=${hours}`,
            note: "The history behind these charts",
          },
          {
            method: "GET",
            path: `/api/pods/${encodeURIComponent(pod.name)}/metrics`,
            note: "The latest sample",
          },
        ]}
      />
    </PodPage>
  );
}
