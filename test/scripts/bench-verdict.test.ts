import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  absoluteRow,
  addedRow,
  atLeastRow,
  parseVerdictRows,
  ratioRow,
  VERDICTS_FILE_ENV,
  verdictTable,
} from "../../bench/support/verdict";

const ROOT = path.resolve(__dirname, "../..");
const TSX = path.join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
const HELPER = path.join(ROOT, "bench", "support", "verdict.ts");
const dir = mkdtempSync(path.join(tmpdir(), "bench-verdict-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a small bench that imports the helper, in its own process as bench/run.ts runs one. */
function runBench(name: string, body: string) {
  const script = path.join(dir, `${name}.ts`);
  const rowsFile = path.join(dir, `${name}.json`);
  writeFileSync(script, `import { verdicts } from ${JSON.stringify(HELPER)};\n${body}\n`);
  const r = spawnSync(process.execPath, [TSX, script], {
    env: { ...process.env, [VERDICTS_FILE_ENV]: rowsFile },
    encoding: "utf8",
    timeout: 90_000,
  });
  let rows: unknown[] = [];
  try {
    rows = parseVerdictRows(readFileSync(rowsFile, "utf8"));
  } catch {
    // no rows written
  }
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, rows };
}

describe("bench/support/verdict.ts", { timeout: 200_000 }, () => {
  it("a bench whose verdicts are all MET exits 0 and writes its rows", () => {
    const r = runBench(
      "all-met",
      `const v = verdicts("api");
       v.ratio({ figure: "GET /api/teams p50", ours: 3, floor: 2.5, target: 1.5, unit: "ms" });
       v.absolute({ figure: "create → page p50", value: 580, limit: 600, unit: "ms", promise: true });
       v.finish();`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("2 met, 0 not met");
    expect(r.rows).toEqual([
      {
        bench: "api",
        figure: "GET /api/teams p50",
        kind: "ratio",
        ours: 3,
        floor: 2.5,
        ratio: 1.2,
        target: 1.5,
        direction: "at most",
        unit: "ms",
        promise: false,
        judged: true,
        met: true,
      },
      {
        bench: "api",
        figure: "create → page p50",
        kind: "absolute",
        ours: 580,
        floor: null,
        ratio: null,
        target: 600,
        direction: "at most",
        unit: "ms",
        promise: true,
        judged: true,
        met: true,
      },
    ]);
  });

  it("one NOT MET among MET ones exits non-zero, with every row written", () => {
    const r = runBench(
      "one-missed",
      `const v = verdicts("deploy");
       v.ratio({ figure: "first deploy", ours: 600, floor: 500, target: 1.3, unit: "ms" });
       v.ratio({ figure: "code-only deploy", ours: 341, floor: 142, target: 1.5, unit: "ms" });
       v.finish();`,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("1 met, 1 not met");
    expect(r.rows).toMatchObject([
      { figure: "first deploy", met: true },
      { figure: "code-only deploy", met: false },
    ]);
  });

  it("an exception after some verdicts exits non-zero and keeps the rows recorded so far", () => {
    const r = runBench(
      "throws",
      `const v = verdicts("boot");
       v.ratio({ figure: "static first start", ours: 1, floor: 1, target: 1.5, unit: "ms" });
       throw new Error("the engine went away");`,
    );
    expect(r.code).not.toBe(0);
    expect(r.rows).toMatchObject([{ figure: "static first start", met: true }]);
  });

  it("a bench that ends without finish(), or finishes with no verdict, exits non-zero", () => {
    const early = runBench(
      "no-finish",
      `const v = verdicts("agent");
       v.ratio({ figure: "start → connected", ours: 1, floor: 1, target: 1.1, unit: "ms" });`,
    );
    expect(early.code).toBe(1);
    expect(early.stderr).toContain("ended before its verdicts were finished");
    const none = runBench("none", `verdicts("agent").finish();`);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain("no verdict recorded");
  });

  it("a figure that was not measured, or a floor that is not positive, is NOT MET", () => {
    const ms = { figure: "x", unit: "ms" };
    expect(ratioRow("b", { ...ms, ours: Number.NaN, floor: 1, target: 2 }).met).toBe(false);
    expect(ratioRow("b", { ...ms, ours: 1, floor: 0, target: 2 }).met).toBe(false);
    expect(ratioRow("b", { ...ms, ours: 1, floor: -1, target: 2 }).met).toBe(false);
    expect(atLeastRow("b", { ...ms, ours: Number.POSITIVE_INFINITY, floor: 1, target: 0.75 }).met).toBe(
      false,
    );
    expect(addedRow("b", { ...ms, ours: Number.NaN, floor: 1, limit: 5 }).met).toBe(false);
    expect(absoluteRow("b", { ...ms, value: Number.NaN, limit: 600 }).met).toBe(false);
  });

  it("judges each kind on its own bound, the bound itself included", () => {
    const f = { figure: "x", unit: "ms" };
    expect(ratioRow("b", { ...f, ours: 150, floor: 100, target: 1.5 }).met).toBe(true);
    expect(ratioRow("b", { ...f, ours: 151, floor: 100, target: 1.5 }).met).toBe(false);
    expect(atLeastRow("b", { ...f, unit: "MB/s", ours: 75, floor: 100, target: 0.75 }).met).toBe(true);
    expect(atLeastRow("b", { ...f, unit: "MB/s", ours: 74, floor: 100, target: 0.75 }).met).toBe(false);
    expect(addedRow("b", { ...f, ours: 6, floor: 1, limit: 5 }).met).toBe(true);
    expect(addedRow("b", { ...f, ours: 6.5, floor: 1, limit: 5 }).met).toBe(false);
    expect(absoluteRow("b", { ...f, value: 0, limit: 0 }).met).toBe(true);
    expect(absoluteRow("b", { ...f, value: 1, limit: 0 }).met).toBe(false);
    expect(absoluteRow("b", { ...f, value: 300, limit: 300, direction: "at least" }).met).toBe(true);
    expect(absoluteRow("b", { ...f, value: 299, limit: 300, direction: "at least" }).met).toBe(false);
  });

  it("prints the closing table with ratio, target and the tally", () => {
    const table = verdictTable([
      ratioRow("deploy", { figure: "code-only deploy", ours: 341, floor: 142, target: 1.5, unit: "ms" }),
      atLeastRow("ssh", { figure: "scp upload", ours: 53, floor: 100, target: 0.75, unit: "MB/s" }),
    ]);
    const lines = table.split("\n");
    expect(lines[0]).toMatch(/^bench\s+figure\s+ours\s+floor\s+ratio\s+target/);
    expect(lines[2]).toMatch(/deploy\s+code-only deploy\s+341 ms\s+142 ms\s+2\.40×\s+≤ 1\.5×\s+NOT MET/);
    expect(lines[3]).toMatch(/ssh\s+scp upload\s+53 MB\/s\s+100 MB\/s\s+0\.53×\s+≥ 0\.75×\s+NOT MET/);
    expect(table.endsWith("0 met, 2 not met")).toBe(true);
  });

  it("an absolute shown beside a ratio is in the table but not counted", () => {
    const r = runBench(
      "shown",
      `const v = verdicts("lifecycle");
       v.ratio({ figure: "create → page vs dockerode", ours: 1300, floor: 1100, target: 1.2, unit: "ms" });
       v.shown({ figure: "create → page p50", value: 1300, limit: 600, unit: "ms" });
       v.finish();`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("1 met, 0 not met");
    expect(r.stdout).toMatch(/create → page p50\s+1300 ms\s+≤ 600 ms \(promise\)\s+shown \(over\)/);
    expect(r.rows).toMatchObject([
      { judged: true, met: true },
      { judged: false, met: false },
    ]);
    const only = runBench(
      "only-shown",
      `const v = verdicts("x"); v.shown({ figure: "y", value: 1, limit: 2, unit: "ms" }); v.finish();`,
    );
    expect(only.code).toBe(1);
  });

  it("reads back only well-formed rows from a verdicts file", () => {
    expect(parseVerdictRows("not json")).toEqual([]);
    expect(parseVerdictRows('{"bench":"x"}')).toEqual([]);
    expect(parseVerdictRows('[{"bench":"x","figure":"y","met":true},{"bench":1}]')).toEqual([
      { bench: "x", figure: "y", met: true, judged: true },
    ]);
  });
});
