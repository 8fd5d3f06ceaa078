/** Small statistics helpers shared by the benches. Samples are plain numbers (milliseconds, bytes, ...). */

/** Ascending copy; the input is left alone. */
export const sorted = (samples: readonly number[]): number[] => [...samples].sort((a, b) => a - b);

/**
 * The p-th percentile (0–100) of samples already sorted ascending, interpolating linearly between the
 * two nearest ranks (the "R-7" / Excel PERCENTILE.INC definition; p50 of [1, 2, 3, 4] is 2.5).
 */
export function percentileSorted(ascending: readonly number[], p: number): number {
  if (ascending.length === 0) return Number.NaN;
  if (p < 0 || p > 100) throw new RangeError(`percentile out of range: ${p}`);
  const rank = (p / 100) * (ascending.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = ascending[lo] as number;
  const b = ascending[hi] as number;
  return a + (b - a) * (rank - lo);
}

/** The p-th percentile (0–100) of unsorted samples. Sort once and use `percentileSorted` for several. */
export const percentile = (samples: readonly number[], p: number): number =>
  percentileSorted(sorted(samples), p);

export const median = (samples: readonly number[]): number => percentile(samples, 50);

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  let sum = 0;
  for (const s of samples) sum += s;
  return sum / samples.length;
}

/** Sample standard deviation (n − 1). */
export function stddev(samples: readonly number[]): number {
  if (samples.length < 2) return Number.NaN;
  const m = mean(samples);
  let sq = 0;
  for (const s of samples) sq += (s - m) ** 2;
  return Math.sqrt(sq / (samples.length - 1));
}

export interface Summary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(samples: readonly number[]): Summary {
  const s = sorted(samples);
  return {
    count: s.length,
    min: s[0] ?? Number.NaN,
    mean: mean(s),
    p50: percentileSorted(s, 50),
    p90: percentileSorted(s, 90),
    p99: percentileSorted(s, 99),
    max: s[s.length - 1] ?? Number.NaN,
  };
}

/** Fixed decimals, or "-" for NaN. */
export const fmt = (n: number, decimals = 2): string => (Number.isNaN(n) ? "-" : n.toFixed(decimals));

/** Renders rows as a plain-text table with a header rule; numbers-looking cells are right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const numeric = header.map(
    (_, i) => rows.length > 0 && rows.every((r) => /^[-+]?[\d.,]+[x%]?$|^-$/.test(r[i] ?? "")),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
