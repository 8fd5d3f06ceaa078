import { html } from "hono/html";

/**
 * A small line chart drawn by the server as inline SVG (no script, nothing for the CSP to allow):
 * CPU and memory, percent of the plan, oldest point left. A missing point breaks the line rather
 * than being drawn as zero. Colours come from classes (dashboard.css); the numbers are said in
 * words too, in the SVG's label and in the text beside it.
 */

const WIDTH = 88;
const HEIGHT = 24;

/** An SVG path through the points; null gaps start a new segment, a lone point is a dot. */
export function sparkPath(values: readonly (number | null)[]): string {
  const step = values.length > 1 ? WIDTH / (values.length - 1) : 0;
  const parts: string[] = [];
  let drawing = false;
  values.forEach((v, i) => {
    if (v === null) {
      drawing = false;
      return;
    }
    const x = (i * step).toFixed(1);
    const y = (HEIGHT - 1 - (Math.min(100, Math.max(0, v)) / 100) * (HEIGHT - 2)).toFixed(1);
    const next = values[i + 1];
    parts.push(`${drawing ? "L" : "M"}${x} ${y}`);
    if (!drawing && (next === null || next === undefined)) parts.push("h0.1");
    drawing = true;
  });
  return parts.join(" ");
}

const known = (values: readonly (number | null)[]) => values.filter((v): v is number => v !== null);
const pct = (n: number) => `${Math.round(n)} %`;

/** "3 % to 12 %, now 8 %": the series in words. */
export function describeSeries(values: readonly (number | null)[]): string {
  const seen = known(values);
  const now = seen.at(-1);
  if (now === undefined) return "no samples";
  return `${pct(Math.min(...seen))} to ${pct(Math.max(...seen))}, now ${pct(now)}`;
}

export interface UsageSeries {
  cpu: readonly (number | null)[];
  memory: readonly (number | null)[];
}

/**
 * CPU and memory of the last hour: the chart, and the latest figures as text beside it. An escaping
 * template rather than JSX (it is drawn in every row of the pods list, where JSX nodes were most of
 * the render time); usable as a JSX child all the same.
 */
export function usageSparkline(usage?: UsageSeries, window = "the last hour") {
  if (!usage || known(usage.cpu).length === 0) return html`<span class="muted">no samples yet</span>`;
  const label = `CPU over ${window}: ${describeSeries(usage.cpu)}; memory: ${describeSeries(usage.memory)}`;
  const cpuNow = known(usage.cpu).at(-1) ?? 0;
  const memNow = known(usage.memory).at(-1) ?? 0;
  return html`<span class="usage"><svg class="sparkline" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${label}"><title>${label}</title><path class="spark-memory" d="${sparkPath(usage.memory)}"></path><path class="spark-cpu" d="${sparkPath(usage.cpu)}"></path></svg><span class="usage-now"><span class="spark-key-cpu">CPU ${pct(cpuNow)}</span> <span class="spark-key-memory">mem ${pct(memNow)}</span></span></span>`;
}
