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
  const { stdout } = await run(
    "npx",
    ["wrangler", "d1", "execute", "DB", ...targetArgs(target), "--json", "--command", sql],
    { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  const parsed = JSON.parse(stdout) as { results: T[] }[];
  return parsed.flatMap((r) => r.results ?? []);
}

export async function d1Migrate(target: D1Target = {}): Promise<void> {
  await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", ...targetArgs(target)], {
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
  });
}
