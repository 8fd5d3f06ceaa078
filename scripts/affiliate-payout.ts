/**
 * Records a payout made to an affiliate (integer cents), after the money was sent (PayPal or
 * otherwise): payouts are never requested through the API. Refuses more than the pending balance.
 *
 *   npm run affiliate:payout -- <affiliate id> --amount <cents> [--method paypal] [--reference "…"]
 *     [--note "…"] [--remote] [--persist-to <dir>]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { d1Execute, sqlText } from "./lib/d1";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    amount: { type: "string" },
    method: { type: "string", default: "paypal" },
    reference: { type: "string" },
    note: { type: "string" },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
  },
});

const usage = () => {
  console.error(
    "usage: npm run affiliate:payout -- <affiliate id> --amount <cents> [--method paypal] [--reference text] [--note text] [--remote]",
  );
  process.exit(2);
};

const affiliateId = positionals[0];
const amount = Number(values.amount);
if (!affiliateId || positionals.length > 1) usage();
if (!Number.isSafeInteger(amount) || amount <= 0) {
  console.error("--amount: a whole number of cents above 0 (1000 is $10.00)");
  usage();
}
if (!/^[a-z_]{2,20}$/.test(values.method)) {
  console.error("--method: a short lowercase word (paypal, wire, …)");
  usage();
}

const target = { remote: values.remote, persistTo: values["persist-to"] };
const id = sqlText(affiliateId ?? "");
try {
  const [row] = await d1Execute(
    `SELECT a.id,
       (SELECT coalesce(sum(commission_amount), 0) FROM affiliate_earnings WHERE affiliate_id = a.id)
       - (SELECT coalesce(sum(amount), 0) FROM affiliate_payouts WHERE affiliate_id = a.id) AS pending
     FROM affiliates a WHERE a.id = ${id}`,
    target,
  );
  if (!row) throw new Error(`no affiliate ${affiliateId}`);
  const pending = Number((row as { pending: number }).pending);
  if (amount > pending)
    throw new Error(`${amount} cents is more than the pending balance (${pending} cents)`);
  const payoutId = `po_${randomBytes(15).toString("base64url")}`;
  const now = new Date().toISOString();
  await d1Execute(
    `INSERT INTO affiliate_payouts (id, affiliate_id, amount, method, status, reference, note, paid_at, created_at) VALUES (${[
      payoutId,
      affiliateId ?? "",
      amount,
      values.method,
      "paid",
      values.reference ?? null,
      values.note ?? null,
      now,
      now,
    ]
      .map(sqlText)
      .join(", ")})`,
    target,
  );
  console.log(
    `payout ${payoutId}: ${amount} cents (${values.method}) to affiliate ${affiliateId}; pending now ${pending - amount}`,
  );
} catch (error) {
  console.error(`affiliate:payout failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
