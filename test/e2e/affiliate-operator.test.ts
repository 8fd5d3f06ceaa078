import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migratedPersistDir } from "../../bench/support/worker";
import { execLocalD1, queryLocalD1 } from "../support/local-d1";

/**
 * The affiliate program's operator commands (docs/affiliates.md), run as the operator runs them
 * (`npm run affiliate:tier|affiliate:payout`, through wrangler) against a local D1 migrated from the
 * migrations (a copy of bench/support/worker.ts's template); the test's own look-ups and seed rows
 * skip wrangler's seconds per run (test/support/local-d1.ts).
 */

const run = promisify(execFile);
let dir = "";
// each operator command is an npm, a tsx and wrangler's runs: seconds each, many more on a busy machine

async function operator(script: "affiliate:tier" | "affiliate:payout", ...args: string[]) {
  return run("npm", ["run", "--silent", script, "--", ...args, "--persist-to", dir], {
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

const affiliate = async (id: string) =>
  (await queryLocalD1<{ tier_slug: string }>(dir, `SELECT tier_slug FROM affiliates WHERE id = '${id}'`))[0];
const earnings = (id: string) =>
  queryLocalD1<{ kind: string; commission_amount: number; tier_slug: string }>(
    dir,
    `SELECT kind, commission_amount, tier_slug FROM affiliate_earnings WHERE affiliate_id = '${id}' ORDER BY created_at`,
  );

beforeAll(async () => {
  dir = await migratedPersistDir();
  const now = new Date().toISOString();
  await execLocalD1(dir, [
    `INSERT INTO affiliates (id, user_id, referral_code, custom_slug, tier_slug, status, paypal_email, created_at, updated_at)
     VALUES ('aff_ops1', 'usr_ops1', 'OPS1CODE', NULL, 'partner', 'active', NULL, '${now}', '${now}')`,
  ]);
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("npm run affiliate:tier", () => {
  it("moves an affiliate to Elite with its $250 bonus once, and back down without taking it", async () => {
    const set = await operator("affiliate:tier", "aff_ops1", "elite");
    expect(set.code, set.out).toBe(0);
    expect(set.out).toContain("partner → elite");
    expect(await affiliate("aff_ops1")).toEqual({ tier_slug: "elite" });
    expect(await earnings("aff_ops1")).toEqual([
      { kind: "bonus", commission_amount: 25_000, tier_slug: "elite" },
    ]);

    // an arrangement ends, and starts again: the bonus stays paid once
    expect((await operator("affiliate:tier", "aff_ops1", "pro")).code).toBe(0);
    expect(await affiliate("aff_ops1")).toEqual({ tier_slug: "pro" });
    expect((await operator("affiliate:tier", "aff_ops1", "elite")).code).toBe(0);
    expect((await earnings("aff_ops1")).length).toBe(1);
  }, 240_000);

  it("refuses an unknown tier or affiliate, and SQL in either, changing nothing", async () => {
    const unknownTier = await operator("affiliate:tier", "aff_ops1", "platinum");
    expect(unknownTier.code).toBe(2);
    expect(unknownTier.out).toContain("starter | partner | pro | elite");
    const unknown = await operator("affiliate:tier", "aff_nobody", "elite");
    expect(unknown.code).toBe(1);
    expect(unknown.out).toContain("no affiliate aff_nobody");
    const injected = await operator("affiliate:tier", "x' OR '1'='1", "starter");
    expect(injected.code).toBe(1);
    expect(await affiliate("aff_ops1")).toEqual({ tier_slug: "elite" });
  }, 240_000);
});

describe("npm run affiliate:payout", () => {
  it("records a payout up to the pending balance and refuses more", async () => {
    const tooMuch = await operator("affiliate:payout", "aff_ops1", "--amount", "25001");
    expect(tooMuch.code).toBe(1);
    expect(tooMuch.out).toContain("more than the pending balance (25000 cents)");
    const paid = await operator("affiliate:payout", "aff_ops1", "--amount", "20000", "--reference", "PP-1");
    expect(paid.code, paid.out).toBe(0);
    expect(paid.out).toContain("pending now 5000");
    const rows = await queryLocalD1<{ amount: number; reference: string }>(
      dir,
      "SELECT amount, reference FROM affiliate_payouts WHERE affiliate_id = 'aff_ops1'",
    );
    expect(rows).toEqual([{ amount: 20_000, reference: "PP-1" }]);
    expect((await operator("affiliate:payout", "aff_ops1", "--amount", "0")).code).toBe(2);
  }, 240_000);
});
