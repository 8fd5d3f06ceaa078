/**
 * Prints the local mail outbox: what the Worker "sent" (D1 table `mail_outbox`) in the local database of
 * `wrangler dev`, newest first.
 *
 *   tsx scripts/mail-outbox.ts [--limit N] [--persist-to DIR]
 *
 * --limit       how many messages (default 20)
 * --persist-to  another local state dir (default .wrangler/state, the one `npm run dev:worker` uses)
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { d1Execute } from "./lib/d1";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const DEFAULT_PERSIST = ".wrangler/state";

interface MailRow {
  id: string;
  to: string;
  subject: string;
  body: string;
  created_at: string;
}

function usage(message?: string): never {
  if (message) console.error(message);
  console.error("usage: tsx scripts/mail-outbox.ts [--limit N] [--persist-to DIR]");
  process.exit(2);
}

function parse() {
  try {
    return parseArgs({
      options: {
        limit: { type: "string", default: "20" },
        "persist-to": { type: "string", default: DEFAULT_PERSIST },
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (err) {
    return usage((err as Error).message);
  }
}

function options() {
  const values = parse();
  if (values.help) usage();
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit <= 0)
    usage(`--limit: expected a positive integer, got ${values.limit}`);
  return { limit, persistTo: path.resolve(ROOT, values["persist-to"]) };
}

/** True when a D1 database file exists under the state dir (wrangler would create an empty one otherwise). */
function hasLocalDatabase(persistTo: string): boolean {
  const dir = path.join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject");
  return existsSync(dir) && readdirSync(dir).some((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
}

async function query(persistTo: string, limit: number): Promise<MailRow[]> {
  const sql = `SELECT id, "to", subject, body, created_at FROM mail_outbox ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
  try {
    return await d1Execute<MailRow>(sql, { persistTo });
  } catch (err) {
    if (!/no such table: mail_outbox/.test(String(err))) throw err;
    console.log("The local database has no mail_outbox table yet: run `npm run db:migrate` first.");
    process.exit(0);
  }
}

/** `2026-07-02T10:31:05.123Z` → `2026-07-02 10:31:05 UTC`. */
function formatDate(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

function render(rows: MailRow[]): string {
  const width = Math.min(process.stdout.columns ?? 80, 100);
  return rows
    .map((m) => {
      const head = `── ${formatDate(m.created_at)} `;
      return [
        head + "─".repeat(Math.max(3, width - head.length)),
        `To:      ${m.to}`,
        `Subject: ${m.subject}`,
        `Id:      ${m.id}`,
        "",
        ...m.body
          .trimEnd()
          .split("\n")
          .map((l) => (l.trim() ? `  ${l}` : "")),
        "",
      ].join("\n");
    })
    .join("\n");
}

async function main() {
  const { limit, persistTo } = options();
  const relative = path.relative(process.cwd(), persistTo);
  const where = relative && !relative.startsWith("..") ? relative : persistTo;
  if (!hasLocalDatabase(persistTo)) {
    console.log(
      `No local database yet in ${where}: start the Worker (\`npm run dev:worker\`) or run \`npm run db:migrate\`, then send some mail (register, forgot-password, invite).`,
    );
    return;
  }
  const rows = await query(persistTo, limit);
  if (rows.length === 0) {
    console.log(`The outbox in ${where} is empty.`);
    return;
  }
  console.log(`${rows.length} message(s), newest first (--limit ${limit}), from ${where}\n`);
  console.log(render(rows));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
