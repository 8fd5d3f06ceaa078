/**
 * One verdict rule for every bench: a figure is MET or NOT MET, a bench with any NOT MET exits non-zero,
 * and `bench/run.ts` collects every bench's rows into one closing table.
 *
 *   const v = verdicts("api");
 *   v.ratio({ figure: "GET /api/teams p50", ours: 3.1, floor: 2.4, target: 1.5, unit: "ms" });   // MET when ours/floor ≤ 1.5
 *   v.atLeast({ figure: "scp upload", ours: 120, floor: 160, target: 0.75, unit: "MB/s" });       // MET when ours/floor ≥ 0.75
 *   v.added({ figure: "/agent/ping p50", ours: 4.1, floor: 1.2, limit: 5, unit: "ms" });           // MET when ours − floor ≤ 5
 *   v.absolute({ figure: "failed requests", value: 0, limit: 0, unit: "" });                      // MET when value ≤ 0
 *   v.shown({ figure: "create → page p50", value: 1495, limit: 600, unit: "ms" });                 // printed, not judged
 *   v.finish();
 *
 * The verdict is a ratio against the floor measured in the same run wherever a floor exists. An
 * absolute verdict is for a product promise or for a count that has no floor (failed requests: 0); a
 * promise this machine cannot keep whatever the code does (create → page ≤ 600 ms, where the bare
 * engine alone takes longer) is `shown` beside its ratio: in the table, not counted. A figure that is not a finite number, or a floor that is
 * not positive, is NOT MET: a bench cannot pass on a figure it failed to measure.
 *
 * `finish()` prints the bench's verdicts and `N met, M not met`, and sets `process.exitCode = 1` on any
 * NOT MET or when there is no verdict at all. A bench that ends before `finish()` (an exception, an
 * early return) exits non-zero too. Each row is also written, as it is recorded, to the JSON file named
 * by `PODHOST_BENCH_VERDICTS` when `bench/run.ts` sets it, so the rows of a bench that fails half-way
 * still reach the closing table.
 */
import { writeFileSync } from "node:fs";
import { formatTable } from "../stats";

/** The environment variable naming the file a bench writes its rows to (set by bench/run.ts). */
export const VERDICTS_FILE_ENV = "PODHOST_BENCH_VERDICTS";

export type VerdictKind = "ratio" | "at least" | "added" | "absolute";

export interface VerdictRow {
  bench: string;
  figure: string;
  kind: VerdictKind;
  /** our figure, in `unit` */
  ours: number;
  /** the same run's floor, in `unit`; null for an absolute */
  floor: number | null;
  /** ours / floor; null for an absolute */
  ratio: number | null;
  /** the bound: a ratio for "ratio" and "at least", an amount in `unit` for "added" and "absolute" */
  target: number;
  /** whether the bound is an upper ("at most") or a lower ("at least") one */
  direction: "at most" | "at least";
  unit: string;
  /** an absolute that is a product promise (e.g. create → page ≤ 600 ms) */
  promise: boolean;
  /** false for a figure shown beside a verdict but not counted (`shown`) */
  judged: boolean;
  /** within the bound; for a judged row, MET */
  met: boolean;
}

interface Figure {
  figure: string;
  unit: string;
}

export interface RatioInput extends Figure {
  ours: number;
  floor: number;
  target: number;
}

export interface AddedInput extends Figure {
  ours: number;
  floor: number;
  /** at most this much above the floor, in `unit` */
  limit: number;
}

export interface AbsoluteInput extends Figure {
  value: number;
  limit: number;
  /** "at most" unless said otherwise */
  direction?: "at most" | "at least";
  promise?: boolean;
}

const finite = (...xs: number[]) => xs.every((x) => Number.isFinite(x));

/** ours / floor, or NaN when either is not a finite number or the floor is not positive. */
function ratioOf(ours: number, floor: number): number {
  return finite(ours, floor) && floor > 0 ? ours / floor : Number.NaN;
}

/** The row of a ratio verdict: MET when ours / floor ≤ target. */
export function ratioRow(bench: string, x: RatioInput): VerdictRow {
  const ratio = ratioOf(x.ours, x.floor);
  return {
    bench,
    figure: x.figure,
    kind: "ratio",
    ours: x.ours,
    floor: x.floor,
    ratio,
    target: x.target,
    direction: "at most",
    unit: x.unit,
    promise: false,
    judged: true,
    met: Number.isFinite(ratio) && ratio <= x.target,
  };
}

/** The row of a throughput-style verdict: MET when ours / floor ≥ target (e.g. 0.75 of `docker cp`). */
export function atLeastRow(bench: string, x: RatioInput): VerdictRow {
  const ratio = ratioOf(x.ours, x.floor);
  return {
    ...ratioRow(bench, x),
    kind: "at least",
    direction: "at least",
    met: Number.isFinite(ratio) && ratio >= x.target,
  };
}

/** The row of an overhead verdict: MET when ours − floor ≤ limit (a fixed cost added to a small floor). */
export function addedRow(bench: string, x: AddedInput): VerdictRow {
  return {
    bench,
    figure: x.figure,
    kind: "added",
    ours: x.ours,
    floor: x.floor,
    ratio: ratioOf(x.ours, x.floor),
    target: x.limit,
    direction: "at most",
    unit: x.unit,
    promise: false,
    judged: true,
    met: finite(x.ours, x.floor) && x.ours - x.floor <= x.limit,
  };
}

/** The row of an absolute verdict: MET when value ≤ limit (or ≥ with `direction: "at least"`). */
export function absoluteRow(bench: string, x: AbsoluteInput): VerdictRow {
  const direction = x.direction ?? "at most";
  return {
    bench,
    figure: x.figure,
    kind: "absolute",
    ours: x.value,
    floor: null,
    ratio: null,
    target: x.limit,
    direction,
    unit: x.unit,
    promise: x.promise ?? false,
    judged: true,
    met: finite(x.value) && (direction === "at most" ? x.value <= x.limit : x.value >= x.limit),
  };
}

/** An absolute printed beside a ratio verdict, not counted: a promise this machine's floor already breaks. */
export function shownRow(bench: string, x: Omit<AbsoluteInput, "promise">): VerdictRow {
  return { ...absoluteRow(bench, { ...x, promise: true }), judged: false };
}

/** A number with as many decimals as its size needs: 1234, 56.7, 3.21. */
export function amount(n: number): string {
  if (!Number.isFinite(n)) return "-";
  const a = Math.abs(n);
  return n.toFixed(a >= 100 || Number.isInteger(n) ? 0 : a >= 10 ? 1 : 2);
}

const withUnit = (n: number, unit: string) =>
  unit === "" || !Number.isFinite(n) ? amount(n) : `${amount(n)} ${unit}`;

/** The cells of the closing table: bench, figure, ours, floor, ratio, target, verdict. */
export function rowCells(r: VerdictRow): string[] {
  const sign = r.direction === "at most" ? "≤" : "≥";
  const target =
    r.kind === "ratio" || r.kind === "at least"
      ? `${sign} ${r.target}×`
      : r.kind === "added"
        ? `${sign} +${withUnit(r.target, r.unit)}`
        : `${sign} ${withUnit(r.target, r.unit)}${r.promise ? " (promise)" : ""}`;
  return [
    r.bench,
    r.figure,
    withUnit(r.ours, r.unit),
    r.floor === null ? "" : withUnit(r.floor, r.unit),
    r.ratio === null ? "" : Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}×` : "-",
    target,
    r.judged ? (r.met ? "MET" : "NOT MET") : `shown (${r.met ? "within" : "over"})`,
  ];
}

export const TABLE_HEADER = ["bench", "figure", "ours", "floor", "ratio", "target", "verdict"] as const;

/** The rows as one aligned table, then `N met, M not met` (of the judged rows). */
export function verdictTable(rows: readonly VerdictRow[]): string {
  const judged = rows.filter((r) => r.judged);
  const met = judged.filter((r) => r.met).length;
  return `${formatTable(TABLE_HEADER, rows.map(rowCells))}\n\n${met} met, ${judged.length - met} not met`;
}

/** Whether every judged row is MET (and there is at least one). */
export const allMet = (rows: readonly VerdictRow[]): boolean =>
  rows.some((r) => r.judged) && rows.every((r) => !r.judged || r.met);

/** Rows read back from a bench's verdicts file: only well-formed rows, never a throw. */
export function parseVerdictRows(text: string): VerdictRow[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed
    .filter(
      (r): r is VerdictRow =>
        typeof r === "object" &&
        r !== null &&
        typeof r.bench === "string" &&
        typeof r.figure === "string" &&
        typeof r.met === "boolean",
    )
    .map((r) => ({ ...r, judged: r.judged !== false }));
}

export interface Verdicts {
  ratio(x: RatioInput): VerdictRow;
  atLeast(x: RatioInput): VerdictRow;
  added(x: AddedInput): VerdictRow;
  absolute(x: AbsoluteInput): VerdictRow;
  shown(x: Omit<AbsoluteInput, "promise">): VerdictRow;
  readonly rows: readonly VerdictRow[];
  /** Prints the summary, sets a non-zero exit code on any NOT MET (or none at all); true when all are MET. */
  finish(): boolean;
}

/** The verdicts of one bench (its name as bench/run.ts calls it: "api", "lifecycle" …). */
export function verdicts(bench: string): Verdicts {
  const rows: VerdictRow[] = [];
  const file = process.env[VERDICTS_FILE_ENV];
  let finished = false;

  process.on("exit", (code) => {
    if (finished || code !== 0) return;
    console.error(`\n${bench}: ended before its verdicts were finished: NOT MET`);
    process.exitCode = 1;
  });

  const record = (row: VerdictRow): VerdictRow => {
    rows.push(row);
    const [, figure, ours, floor, ratio, target, verdict] = rowCells(row);
    const against = row.floor === null ? "" : ` against ${floor} (${ratio})`;
    console.log(`${(verdict ?? "").padEnd(7)}  ${figure}: ${ours}${against}, target ${target}`);
    if (file) writeFileSync(file, JSON.stringify(rows, null, 1));
    return row;
  };

  return {
    ratio: (x) => record(ratioRow(bench, x)),
    atLeast: (x) => record(atLeastRow(bench, x)),
    added: (x) => record(addedRow(bench, x)),
    absolute: (x) => record(absoluteRow(bench, x)),
    shown: (x) => record(shownRow(bench, x)),
    rows,
    finish() {
      finished = true;
      if (file) writeFileSync(file, JSON.stringify(rows, null, 1));
      console.log(`\n${bench}: verdicts\n`);
      if (!rows.some((r) => r.judged)) {
        console.log("no verdict recorded: NOT MET");
        process.exitCode = 1;
        return false;
      }
      console.log(verdictTable(rows));
      const ok = allMet(rows);
      if (!ok) process.exitCode = 1;
      return ok;
    },
  };
}
