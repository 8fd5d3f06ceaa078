/**
 * Grants a team a credit (integer cents); the next invoices use it before charging the card,
 * soonest-expiring credit first.
 *
 *   npm run billing:credit -- <team id> --amount <cents> [--type promo|bonus|refund]
 *     [--reason "…"] [--expires-in-days <n>] [--remote] [--persist-to <dir>]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { d1Execute, sqlText } from "./lib/d1";

const TYPES = ["promo", "bonus", "refund"];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    amount: { type: "string" },
    type: { type: "string", default: "promo" },
    reason: { type: "string", default: "" },
    "expires-in-days": { type: "string" },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
  },
});

const usage = () => {
  console.error(
    "usage: npm run billing:credit -- <team id> --amount <cents> [--type promo|bonus|refund] [--reason text] [--expires-in-days n] [--remote]",
  );
  process.exit(2);
};

const teamId = positionals[0];
const amount = Number(values.amount);
const days = values["expires-in-days"] === undefined ? undefined : Number(values["expires-in-days"]);
if (!teamId || positionals.length > 1) usage();
if (!Number.isSafeInteger(amount) || amount <= 0) {
  console.error("--amount: a whole number of cents above 0 (1000 is $10.00)");
  usage();
}
if (!TYPES.includes(values.type)) {
  console.error(`--type: one of ${TYPES.join(", ")}`);
  usage();
}
if (days !== undefined && (!Number.isSafeInteger(days) || days <= 0)) {
  console.error("--expires-in-days: a whole number of days above 0");
  usage();
}

const target = { remote: values.remote, persistTo: values["persist-to"] };
try {
  const [team] = await d1Execute(`SELECT id FROM teams WHERE id = ${sqlText(teamId ?? "")}`, target);
  if (!team) throw new Error(`no team ${teamId}`);
  const id = `cr_${randomBytes(15).toString("base64url")}`;
  const now = new Date();
  const expiresAt = days === undefined ? null : new Date(now.getTime() + days * 86_400_000).toISOString();
  await d1Execute(
    `INSERT INTO credits (id, team_id, amount, remaining, type, reason, expires_at, created_at) VALUES (${[
      id,
      teamId ?? "",
      amount,
      amount,
      values.type,
      values.reason,
      expiresAt,
      now.toISOString(),
    ]
      .map(sqlText)
      .join(", ")})`,
    target,
  );
  console.log(
    `credit ${id}: ${amount} cents (${values.type}) for team ${teamId}${expiresAt ? `, expires ${expiresAt}` : ""}`,
  );
} catch (error) {
  console.error(`billing:credit failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
