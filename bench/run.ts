/**
 * Runs the benches: every `bench/<name>.ts` (not this runner, not stats.ts, not support/ nor a bench's
 * folder of parts such as bench/lifecycle/, not the 30-minute soak, which runs only when named) one after
 * the other, or only those named.
 *
 *   npm run bench                 # all of them
 *   npm run bench -- api ssh      # bench/api.ts, then bench/ssh.ts
 *   npm run bench -- api -- --requests 1000   # arguments after a second `--` go to every bench run
 *
 * Each bench runs in its own process (`tsx bench/<name>.ts`), so one bench's Worker, sockets and heap never
 * colour the next one's numbers. Each writes its verdicts (bench/support/verdict.ts) to a file named here;
 * at the end one closing table holds every bench's figures, then `N met, M not met`. The exit code is
 * non-zero when any bench failed or any figure is NOT MET.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseVerdictRows, VERDICTS_FILE_ENV, type VerdictRow, verdictTable } from "./support/verdict";

const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
const NOT_BENCHES = new Set(["run", "stats"]);
/** Run only when named (`npm run bench -- soak`, or `npm run bench:soak`): the soak takes 30 minutes. */
const ONLY_WHEN_NAMED = new Set(["soak"]);
/** The usual order (cheap to expensive); any other bench file runs after these, alphabetically. */
const ORDER = [
  "api",
  "lifecycle",
  "boot",
  "agent",
  "inside",
  "ssh",
  "deploy",
  "services",
  "backup",
  "imports",
  "billing",
  "scale",
  "density",
  "edge",
];

function available(): string[] {
  const names = readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
    .map((f) => f.slice(0, -3))
    .filter((n) => !NOT_BENCHES.has(n));
  const rank = (n: string) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function runOne(name: string, args: string[], verdictsFile: string): Promise<number> {
  const tsxCli = path.join(BENCH_DIR, "..", "node_modules", "tsx", "dist", "cli.mjs");
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tsxCli, path.join(BENCH_DIR, `${name}.ts`), ...args], {
      stdio: "inherit",
      env: { ...process.env, [VERDICTS_FILE_ENV]: verdictsFile },
    });
    child.on("error", (err) => {
      console.error(`${name}: ${err.message}`);
      resolve(1);
    });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

async function main() {
  const argv = process.argv.slice(2);
  const split = argv.indexOf("--");
  const requested = (split === -1 ? argv : argv.slice(0, split)).map((n) =>
    n.replace(/^bench\//, "").replace(/\.ts$/, ""),
  );
  const passThrough = split === -1 ? [] : argv.slice(split + 1);

  const all = available();
  const unknown = requested.filter((n) => !all.includes(n));
  if (unknown.length > 0) {
    console.error(`unknown bench: ${unknown.join(", ")} (available: ${all.join(", ") || "none"})`);
    process.exit(2);
  }
  const selected = requested.length > 0 ? requested : all.filter((n) => !ONLY_WHEN_NAMED.has(n));

  const dir = mkdtempSync(path.join(tmpdir(), "podhost-bench-"));
  const results: { name: string; code: number; seconds: number; rows: VerdictRow[] }[] = [];
  try {
    for (const name of selected) {
      console.log(`\n=== bench: ${name} ===\n`);
      const t = performance.now();
      const file = path.join(dir, `${name}.json`);
      const code = await runOne(name, passThrough, file);
      const rows = existsSync(file) ? parseVerdictRows(readFileSync(file, "utf8")) : [];
      results.push({ name, code, seconds: (performance.now() - t) / 1000, rows });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  console.log("\n=== summary ===\n");
  for (const r of results) {
    const judged = r.rows.filter((row) => row.judged);
    const missed = judged.filter((row) => !row.met).length;
    const state =
      r.code === 0
        ? "ok"
        : missed > 0
          ? `NOT MET (${missed} of ${judged.length})`
          : `FAILED (exit ${r.code})`;
    console.log(`${r.name.padEnd(12)} ${state.padEnd(22)} ${r.seconds.toFixed(1)} s`);
  }
  console.log(`\n${verdictTable(results.flatMap((r) => r.rows))}`);
  const failed = results.filter((r) => r.code !== 0).length;
  if (failed > 0) console.log(`${failed} of ${results.length} benches exited non-zero`);
  if (failed > 0 || results.some((r) => r.rows.some((row) => row.judged && !row.met))) process.exitCode = 1;
}

void main();
