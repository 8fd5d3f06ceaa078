/**
 * Daily accrual bench: the billing cron's accrual of one day (worker/services/billing/accrual.ts)
 * over a fleet in local D1 (Miniflare, the same SQLite engine as `wrangler dev`), at two sizes:
 * 1,000 pods in 200 teams and 100,000 pods in 20,000 teams. It prints the time and the rows D1
 * read per team; both must stay flat as the fleet grows (a page is an index range over team ids,
 * never a scan of the fleet): target, per team at 100k ≤ 1.5× the time and ≤ 1.1× the rows at 1k.
 * A second run of the same day must charge nothing.
 *
 *   tsx bench/billing.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { Miniflare } from "miniflare";
import { seedFleet } from "./support/fleet";
import { verdicts } from "./support/verdict";

const TARGET = { perTeamTime: 1.5, perTeamRows: 1.1 };
const v = verdicts("billing");

/**
 * The accrual is the Worker's own code, typed against workers-types (D1Database), which this Node
 * project does not load (they clash with Node's): the modules are imported by a path TypeScript
 * does not follow, and typed here by what the bench uses.
 */
interface AccrualModule {
  ACCRUAL_PAGE_TEAMS: number;
  accrueTeamsPage(
    db: unknown,
    day: string,
    afterTeamId: string,
  ): Promise<{ lastTeamId: string | null; charged: number; rowsRead: number }>;
}
const accrualPath = "../worker/services/billing/accrual.ts";
const clientPath = "../worker/db/client.ts";
const { ACCRUAL_PAGE_TEAMS, accrueTeamsPage } = (await import(accrualPath)) as AccrualModule;
const { createDb } = (await import(clientPath)) as { createDb(d1: unknown): unknown };

const statements = (sql: string) =>
  sql
    .split(/--> statement-breakpoint|;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
    .filter(Boolean);

async function fleet(pods: number, teams: number) {
  const mf = new Miniflare({
    modules: true,
    script: "export default { fetch() { return new Response('') } }",
    d1Databases: ["DB"],
  });
  const d1 = await mf.getD1Database("DB");
  for (const file of readdirSync("migrations")
    .filter((f) => f.endsWith(".sql"))
    .sort()) {
    for (const stmt of statements(readFileSync(`migrations/${file}`, "utf8"))) await d1.prepare(stmt).run();
  }
  await seedFleet(d1, { pods, teams });
  return { mf, db: createDb(d1) };
}

async function measure(pods: number, teams: number) {
  const { mf, db } = await fleet(pods, teams);
  const day = "2030-01-05";
  const run = async () => {
    let cursor = "";
    let rowsRead = 0;
    let charged = 0;
    let pages = 0;
    const started = performance.now();
    for (;;) {
      const page = await accrueTeamsPage(db, day, cursor);
      rowsRead += page.rowsRead;
      charged += page.charged;
      if (page.lastTeamId === null) break;
      cursor = page.lastTeamId;
      pages++;
    }
    return { ms: performance.now() - started, rowsRead, charged, pages };
  };
  const first = await run();
  const again = await run();
  await mf.dispose();
  console.log(
    `${pods.toLocaleString("en")} pods / ${teams.toLocaleString("en")} teams: ${first.pages} pages of ${ACCRUAL_PAGE_TEAMS} teams, ` +
      `${first.ms.toFixed(0)} ms (${((first.ms / teams) * 1000).toFixed(1)} µs/team), ` +
      `${(first.rowsRead / teams).toFixed(1)} rows read/team, ${first.charged} charges; ` +
      `re-run: ${again.charged} charges, ${(again.rowsRead / teams).toFixed(1)} rows read/team`,
  );
  if (first.charged !== pods) throw new Error(`accrual charged ${first.charged} of ${pods} pods`);
  return { usPerTeam: (first.ms / teams) * 1000, rowsPerTeam: first.rowsRead / teams, again: again.charged };
}

const small = await measure(1_000, 200);
const large = await measure(100_000, 20_000);
v.ratio({
  figure: "accrual time per team, 100k pods vs 1k pods",
  ours: large.usPerTeam,
  floor: small.usPerTeam,
  target: TARGET.perTeamTime,
  unit: "µs",
});
v.ratio({
  figure: "rows read per team, 100k pods vs 1k pods",
  ours: large.rowsPerTeam,
  floor: small.rowsPerTeam,
  target: TARGET.perTeamRows,
  unit: "rows",
});
v.absolute({
  figure: "charges of a second run of the same day",
  value: small.again + large.again,
  limit: 0,
  unit: "",
});
v.finish();
