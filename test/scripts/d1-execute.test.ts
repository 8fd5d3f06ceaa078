import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { d1Execute } from "../../scripts/lib/d1";

const run = promisify(execFile);

describe("the operator scripts' D1 access (scripts/lib/d1.ts)", () => {
  const persistTo = mkdtempSync(join(tmpdir(), "podhost-d1-"));
  beforeAll(() => d1Execute("CREATE TABLE t (x INTEGER)", { persistTo }), 60_000);
  afterAll(() => rmSync(persistTo, { recursive: true, force: true }));

  it("sends a statement again while another writer holds the database (wrangler says SQLITE_BUSY on stdout)", async () => {
    // A second wrangler runs one INSERT … SELECT that holds the write lock for seconds: the database is locked meanwhile,
    // as it is while a local Worker writes (a clean CI run lost `host:drain` to this).
    const slow = run(
      "npx",
      [
        "wrangler",
        "d1",
        "execute",
        "DB",
        "--local",
        "--persist-to",
        persistTo,
        "--json",
        "--command",
        // counts to 20 million and keeps none of it: seconds of holding the write lock, no rows
        "INSERT INTO t WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000000) SELECT n FROM c WHERE n < 0",
      ],
      { env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_800));
    await d1Execute("INSERT INTO t VALUES (-1)", { persistTo });
    await slow;
    const [row] = await d1Execute<{ n: number; mine: number }>(
      "SELECT COUNT(*) AS n, SUM(x = -1) AS mine FROM t",
      { persistTo },
    );
    expect(row).toEqual({ n: 1, mine: 1 });
  }, 120_000);

  it("throws wrangler's own words for a statement it refuses, at once", async () => {
    const started = Date.now();
    await expect(d1Execute("SELECT nope FROM missing_table", { persistTo })).rejects.toThrow(
      /wrangler d1 execute failed: .*no such table: missing_table/,
    );
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 60_000);
});
