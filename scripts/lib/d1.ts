import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface D1Target {
  /** `--local` (default) or `--remote` */
  remote?: boolean;
  /** the local state directory wrangler dev uses (`--persist-to`) */
  persistTo?: string;
}

const targetArgs = (t: D1Target) => [
  t.remote ? "--remote" : "--local",
  ...(t.persistTo && !t.remote ? ["--persist-to", t.persistTo] : []),
];

/** SQL string literal: the only quoting SQLite needs is doubling single quotes. */
export const sqlText = (value: string | number | null) =>
  value === null ? "NULL" : typeof value === "number" ? String(value) : `'${value.replaceAll("'", "''")}'`;

/** Runs SQL against the D1 database through wrangler, as the operator would by hand. */
export async function d1Execute<T = Record<string, unknown>>(
  sql: string,
  target: D1Target = {},
): Promise<T[]> {
  const args = ["wrangler", "d1", "execute", "DB", ...targetArgs(target), "--json", "--command", sql];
  const options = { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } };
  let stdout = "";
  for (let attempt = 1; ; attempt++) {
    try {
      ({ stdout } = await run("npx", args, options));
      break;
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message?: string };
      // With --json, wrangler reports its error as {"error":{"text":…}} on stdout, not stderr.
      const said = wranglerError(e.stdout) ?? `${e.stderr ?? ""}`.trim();
      // A local Worker that is running holds the same SQLite file and may be writing: SQLite refuses
      // the statement whole (SQLITE_BUSY), so it is safe to send it again a moment later.
      const busy = /SQLITE_BUSY|database is locked/i.test(`${said}\n${e.stdout ?? ""}\n${e.message ?? ""}`);
      if (target.remote || !busy || attempt >= 8) {
        throw new Error(`wrangler d1 execute failed: ${said || e.message || String(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
  const parsed = JSON.parse(stdout) as { results: T[] }[];
  return parsed.flatMap((r) => r.results ?? []);
}

/** The error text wrangler prints on stdout as JSON when run with --json, if any. */
function wranglerError(stdout: string | undefined): string | undefined {
  if (!stdout) return undefined;
  try {
    const parsed = JSON.parse(stdout) as { error?: { text?: string; notes?: { text?: string }[] } };
    if (!parsed.error) return undefined;
    return [parsed.error.text, ...(parsed.error.notes ?? []).map((n) => n.text)].filter(Boolean).join(": ");
  } catch {
    return undefined;
  }
}

export async function d1Migrate(target: D1Target = {}): Promise<void> {
  await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", ...targetArgs(target)], {
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
  });
}
