/**
 * Sets an affiliate's tier by hand: Elite is "by arrangement" (no milestone reaches it), and an
 * arrangement can end. The tier's bonus is credited once ever, as the automatic upgrade does
 * (`bonus:<affiliate>:<tier>`), when the affiliate moves up to a tier with one.
 *
 *   npm run affiliate:tier -- <affiliate id> <tier slug> [--remote] [--persist-to <dir>]
 */
import { parseArgs } from "node:util";
import { newId } from "../shared/ids";
import { TIERS, tierRank } from "../worker/services/affiliates/tiers";
import { d1Execute, sqlText } from "./lib/d1";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
  },
});

const [affiliateId, slug] = positionals;
const tier = TIERS.find((t) => t.slug === slug);
if (!affiliateId || !slug || positionals.length > 2 || !tier) {
  console.error(
    `usage: npm run affiliate:tier -- <affiliate id> <tier: ${TIERS.map((t) => t.slug).join(" | ")}> [--remote]`,
  );
  process.exit(2);
}

const target = { remote: values.remote, persistTo: values["persist-to"] };
try {
  const [row] = await d1Execute<{ tier_slug: string }>(
    `SELECT tier_slug FROM affiliates WHERE id = ${sqlText(affiliateId)}`,
    target,
  );
  if (!row) throw new Error(`no affiliate ${affiliateId}`);
  const now = new Date().toISOString();
  const up = tierRank(tier.slug) > tierRank(row.tier_slug);
  const statements = [
    `UPDATE affiliates SET tier_slug = ${sqlText(tier.slug)}, updated_at = ${sqlText(now)} WHERE id = ${sqlText(affiliateId)}`,
  ];
  if (up && tier.bonus > 0)
    statements.push(
      `INSERT OR IGNORE INTO affiliate_earnings (id, affiliate_id, referral_id, invoice_id, kind, payment_amount,
         commission_rate, commission_amount, tier_slug, dedupe_key, created_at) VALUES (${[
           newId("earn"),
           affiliateId,
           null,
           null,
           "bonus",
           0,
           0,
           tier.bonus,
           tier.slug,
           `bonus:${affiliateId}:${tier.slug}`,
           now,
         ]
           .map(sqlText)
           .join(", ")})`,
    );
  // one `wrangler d1 execute`: both statements land together
  await d1Execute(statements.join(";\n"), target);
  console.log(
    `affiliate ${affiliateId}: ${row.tier_slug} → ${tier.slug} (${tier.commissionPercent}% from the next payment)${up && tier.bonus > 0 ? `; bonus ${tier.bonus} cents credited unless it was before` : ""}`,
  );
} catch (error) {
  console.error(`affiliate:tier failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
