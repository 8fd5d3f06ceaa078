/**
 * Daily accrual bench: the billing cron's accrual of one day (worker/services/billing/accrual.ts)
 * over a fleet in local D1 (Miniflare, the same SQLite engine as `wrangler dev`), at two sizes:
 * 1,000 pods in 200 teams and 100,000 pods in 20,000 teams. It prints the time and the rows D1
 * read per team; both must stay flat as the fleet grows (a page is an index range over team ids,
 * never a scan of the fleet): target, per team at 100k ≤ 1.5× the time and ≤ 1.1× the rows at 1k.
 * The floor, at each size and in the same D1 over the same rows: the same day's charges made by one
 * INSERT … SELECT over the whole fleet (what the accrual would be without pages, which a Worker
 * cannot afford at fleet scale); the paged accrual must stay within 1.5× of it. Floor and accrual
 * alternate, the day's charges deleted between runs; the median of 3 of each is compared. A second
 * run of the same day must charge nothing.
 *
 *   tsx bench/billing.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { type SQL, sql } from "drizzle-orm";
import { Miniflare } from "miniflare";
import { unstable_splitSqlQuery } from "wrangler";
import { seedFleet } from "./support/fleet";
import { verdicts } from "./support/verdict";

const TARGET = { perTeamTime: 1.5, perTeamRows: 1.1, vsOneStatement: 1.5 };
const ROUNDS = 3;
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
const ratesPath = "../worker/services/billing/rates.ts";
const periodsPath = "../worker/services/billing/periods.ts";
const { ACCRUAL_PAGE_TEAMS, accrueTeamsPage } = (await import(accrualPath)) as AccrualModule;
const { createDb } = (await import(clientPath)) as { createDb(d1: unknown): unknown };
const { dailyRateSql } = (await import(ratesPath)) as { dailyRateSql(): SQL };
const { dayStartIso, nextDay } = (await import(periodsPath)) as {
  dayStartIso(day: string): string;
  nextDay(day: string): string;
};
/** drizzle's `run`, which is all the floor needs of the Worker's database client */
type RunDb = { run(query: SQL): Promise<{ meta: { changes?: number } }> };

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
    // wrangler's own splitter: a trigger's body holds semicolons of its own
    for (const stmt of unstable_splitSqlQuery(readFileSync(`migrations/${file}`, "utf8")))
      await d1.prepare(stmt).run();
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
  /** the floor: the day's charges in one statement over the whole fleet, as the accrual makes them */
  const oneStatement = async () => {
    const dayStart = dayStartIso(day);
    const dayEnd = dayStartIso(nextDay(day));
    const started = performance.now();
    const inserted = await (db as RunDb).run(
      sql`INSERT INTO pod_charges (team_id, pod_id, day, pod_name, plan_slug, amount)
          SELECT team_id, id, ${day}, name, plan_slug, ${dailyRateSql()} FROM pods
          WHERE created_at < ${dayEnd} AND (deleted_at IS NULL OR deleted_at >= ${dayStart})
          ON CONFLICT DO NOTHING`,
    );
    return { ms: performance.now() - started, charged: inserted.meta.changes ?? 0 };
  };
  const forget = () => (db as RunDb).run(sql`DELETE FROM pod_charges WHERE day = ${day}`);
  const floors: number[] = [];
  const ours: Awaited<ReturnType<typeof run>>[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const floor = await oneStatement();
    if (floor.charged !== pods) throw new Error(`the one statement charged ${floor.charged} of ${pods} pods`);
    floors.push(floor.ms);
    await forget();
    ours.push(await run());
    // the last round's charges stay: the re-run below must find the day charged
    if (i < ROUNDS - 1) await forget();
  }
  const first = ours.sort((a, b) => a.ms - b.ms)[Math.floor(ROUNDS / 2)] as (typeof ours)[number];
  const floorMs = median(floors);
  const again = await run();
  await mf.dispose();
  console.log(
    `${pods.toLocaleString("en")} pods / ${teams.toLocaleString("en")} teams: ${first.pages} pages of ${ACCRUAL_PAGE_TEAMS} teams, ` +
      `${first.ms.toFixed(0)} ms (${((first.ms / teams) * 1000).toFixed(1)} µs/team; one statement ${floorMs.toFixed(0)} ms), ` +
      `${(first.rowsRead / teams).toFixed(1)} rows read/team, ${first.charged} charges; ` +
      `re-run: ${again.charged} charges, ${(again.rowsRead / teams).toFixed(1)} rows read/team`,
  );
  if (first.charged !== pods) throw new Error(`accrual charged ${first.charged} of ${pods} pods`);
  return {
    ms: first.ms,
    floorMs,
    usPerTeam: (first.ms / teams) * 1000,
    rowsPerTeam: first.rowsRead / teams,
    again: again.charged,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const small = await measure(1_000, 200);
const large = await measure(100_000, 20_000);
for (const [size, m] of [
  ["1k", small],
  ["100k", large],
] as const)
  v.ratio({
    figure: `accrual of a day at ${size} pods vs one INSERT … SELECT over the fleet`,
    ours: m.ms,
    floor: m.floorMs,
    target: TARGET.vsOneStatement,
    unit: "ms",
  });
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
