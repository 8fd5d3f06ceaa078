/**
 * Rotates the keys of the secrets at rest (worker/lib/sealing.ts) and re-seals every sealed value in
 * D1 with the new key, its purpose and its owner as associated data (values sealed before associated
 * data, `v1.…`, become `v2.…` on the way). The procedure is in docs/security.md ("Rotating the keys
 * at rest").
 *
 *   npm run secrets:rotate [-- --key GIT_TOKEN_KEY …] [--persist-to <dir>] [--dev-vars <file>]
 *     Local: makes a new key for each name in .dev.vars, keeps the old one as <NAME>_PREVIOUS while it
 *     re-seals, then drops it. Restart `npm start` afterwards (wrangler dev reads .dev.vars at start).
 *
 *   NAME=<new> NAME_PREVIOUS=<old> npm run secrets:rotate -- --remote [--key NAME …]
 *     Production: the Worker already has the new key as NAME and the old as NAME_PREVIOUS (both set
 *     with `wrangler secret put`); this re-seals D1 with the new key. Then delete NAME_PREVIOUS.
 *
 * Each value is replaced by a conditional UPDATE (`… WHERE <column> = <the value read>`), so a value
 * the Worker changed meanwhile is left as the Worker wrote it (sealed with the new key already).
 * Exit status: 0 when everything is sealed with the new key, 1 when a value cannot be opened (named
 * by its table and row; it is left as it is, and so is <NAME>_PREVIOUS), 2 for bad arguments.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  type KeyRing,
  keyProblem,
  open,
  SECRET_KEY_NAMES,
  SECRET_PURPOSES,
  type SecretKeyName,
  type SecretPurpose,
  seal,
  sealedWith,
} from "../worker/lib/sealing";
import { type D1Target, d1Execute, sqlText } from "./lib/d1";

/**
 * Every sealed column, with the SQL giving each row's owner as the Worker seals it:
 * worker/services/git/secrets.ts (the pod's id), worker/services/services/passwords.ts
 * (`<pod id>/<type>`), worker/services/invitations/invitations.ts (the invitation's id),
 * worker/services/alerts/channels.ts (the channel's id).
 */
const SEALED_COLUMNS: {
  purpose: SecretPurpose;
  table: string;
  id: string;
  column: string;
  owner: string;
}[] = [
  { purpose: "git-token", table: "git_configs", id: "pod_id", column: "token_encrypted", owner: "pod_id" },
  {
    purpose: "git-webhook-secret",
    table: "git_configs",
    id: "pod_id",
    column: "webhook_secret_encrypted",
    owner: "pod_id",
  },
  {
    purpose: "service-password",
    table: "pod_services",
    id: "id",
    column: "password_encrypted",
    owner: "pod_id || '/' || service_type",
  },
  { purpose: "invitation-token", table: "invitations", id: "id", column: "token_sealed", owner: "id" },
  {
    purpose: "alert-webhook-secret",
    table: "alert_channels",
    id: "id",
    column: "secret_sealed",
    owner: "id",
  },
];

const ROOT = path.resolve(import.meta.dirname, "..");

const { values } = parseArgs({
  options: {
    key: { type: "string", multiple: true },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
    "dev-vars": { type: "string", default: path.join(ROOT, ".dev.vars") },
  },
});

const usage = (why: string): never => {
  console.error(why);
  console.error(
    `usage: npm run secrets:rotate -- [--key ${SECRET_KEY_NAMES.join("|")} …] [--remote] [--persist-to dir] [--dev-vars file]`,
  );
  process.exit(2);
};

const isKeyName = (name: string): name is SecretKeyName => (SECRET_KEY_NAMES as string[]).includes(name);
const names: SecretKeyName[] = (values.key ?? [...SECRET_KEY_NAMES]).map((name) =>
  isKeyName(name) ? name : usage(`--key: one of ${SECRET_KEY_NAMES.join(", ")}`),
);
const target: D1Target = { remote: values.remote, persistTo: values["persist-to"] };
const devVarsFile = values["dev-vars"];

/** `NAME="value"` lines of .dev.vars, as wrangler reads them. */
function readVar(text: string, name: string): string | undefined {
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq < 0 || line.slice(0, eq).trim() !== name) continue;
    const value = line.slice(eq + 1).trim();
    return value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
  }
  return undefined;
}

function writeVars(file: string, changes: Record<string, string | undefined>) {
  const lines = (existsSync(file) ? readFileSync(file, "utf8") : "").split("\n");
  const kept = lines.filter((line) => {
    const eq = line.indexOf("=");
    return eq < 0 || !(line.slice(0, eq).trim() in changes);
  });
  while (kept.length && kept[kept.length - 1] === "") kept.pop();
  for (const [name, value] of Object.entries(changes))
    if (value !== undefined) kept.push(`${name}="${value}"`);
  writeFileSync(file, `${kept.join("\n")}\n`, { mode: 0o600 });
}

interface Unopened {
  key: SecretKeyName;
  table: string;
  id: string;
  column: string;
  why: string;
}

/**
 * Re-seals every value of the columns sealed under the rings' keys with each ring's current key: one
 * read of every sealed column, then the conditional UPDATEs. A value the Worker rewrote between the
 * read and its UPDATE is not touched: the next pass reads it again (sealed with the new key already,
 * it needs nothing).
 */
async function reseal(
  rings: Map<SecretKeyName, KeyRing>,
): Promise<{ resealed: Map<SecretKeyName, number>; unopened: Unopened[] }> {
  const resealed = new Map<SecretKeyName, number>([...rings.keys()].map((name) => [name, 0]));
  const columns = SEALED_COLUMNS.filter((c) => rings.has(SECRET_PURPOSES[c.purpose].key));
  if (columns.length === 0) return { resealed, unopened: [] };
  const read = columns
    .map(
      (c, i) =>
        `SELECT ${i} AS col, ${c.id} AS id, ${c.owner} AS owner, ${c.column} AS sealed FROM ${c.table} WHERE ${c.column} IS NOT NULL`,
    )
    .join(" UNION ALL ");
  for (let pass = 0; ; pass++) {
    const unopened: Unopened[] = [];
    const updates: string[] = [];
    for (const row of await d1Execute<{ col: number; id: string; owner: string; sealed: string }>(
      read,
      target,
    )) {
      const c = columns[row.col];
      if (!c) continue;
      const key = SECRET_PURPOSES[c.purpose].key;
      const ring = rings.get(key);
      if (!ring || (await sealedWith(ring.current, row.sealed))) continue;
      const opened = await open(ring, c.purpose, row.owner, row.sealed);
      if (!opened.ok) {
        const why = {
          format: "an unknown format",
          key: `sealed with neither ${key} nor ${key}_PREVIOUS`,
          decrypt: "sealed for another row or purpose",
        }[opened.reason];
        unopened.push({ key, table: c.table, id: row.id, column: c.column, why });
        continue;
      }
      const sealed = await seal(ring, c.purpose, row.owner, opened.value);
      updates.push(
        `UPDATE ${c.table} SET ${c.column} = ${sqlText(sealed)} WHERE ${c.id} = ${sqlText(row.id)} AND ${c.column} = ${sqlText(row.sealed)}`,
      );
      if (pass === 0) resealed.set(key, (resealed.get(key) ?? 0) + 1);
    }
    if (updates.length === 0) return { resealed, unopened };
    if (pass === 3) {
      const why = "rewritten during every pass; run the rotation again";
      for (const name of rings.keys())
        unopened.push({ key: name, table: "(some)", id: `of ${updates.length} rows`, column: "", why });
      return { resealed, unopened };
    }
    for (let i = 0; i < updates.length; i += 200)
      await d1Execute(updates.slice(i, i + 200).join(";\n"), target);
  }
}

async function main(): Promise<number> {
  const devVars = existsSync(devVarsFile) ? readFileSync(devVarsFile, "utf8") : "";
  const rings = new Map<SecretKeyName, KeyRing>();
  for (const name of names) {
    if (values.remote) {
      const current = process.env[name];
      const previous = process.env[`${name}_PREVIOUS`] || undefined;
      if (!current) usage(`--remote: set ${name} (the new key, as the Worker has it) in the environment`);
      rings.set(name, { current: current as string, previous });
    } else {
      const old = readVar(devVars, name);
      if (!old) {
        console.log(`${name}: not in ${devVarsFile}; nothing is sealed under it here`);
        continue;
      }
      rings.set(name, { current: randomBytes(32).toString("base64"), previous: old });
    }
  }
  for (const [name, ring] of rings)
    for (const [label, raw] of [
      [name, ring.current],
      [`${name}_PREVIOUS`, ring.previous],
    ] as const) {
      const problem = raw === undefined ? undefined : keyProblem(raw);
      if (problem) usage(`${label} ${problem}`);
    }

  if (!values.remote) {
    // The new key first, the old one beside it: a Worker started meanwhile opens both.
    const changes: Record<string, string | undefined> = {};
    for (const [name, ring] of rings) {
      changes[name] = ring.current;
      changes[`${name}_PREVIOUS`] = ring.previous;
    }
    writeVars(devVarsFile, changes);
  }

  const { resealed, unopened } = await reseal(rings);
  let failed = false;
  for (const name of rings.keys()) {
    const n = resealed.get(name) ?? 0;
    console.log(`${name}: ${n} value${n === 1 ? "" : "s"} re-sealed with the new key`);
    const left = unopened.filter((u) => u.key === name);
    for (const u of left)
      console.error(`${name}: ${u.table} ${u.id} ${u.column} cannot be opened (${u.why}); left as it is`);
    if (left.length) {
      failed = true;
      console.error(`${name}_PREVIOUS is kept: nothing sealed under it is lost`);
    } else if (!values.remote) writeVars(devVarsFile, { [`${name}_PREVIOUS`]: undefined });
    else console.log(`${name}: now remove the previous key: npx wrangler secret delete ${name}_PREVIOUS`);
  }
  if (!values.remote && rings.size)
    console.log("restart npm start: wrangler dev reads .dev.vars when it starts");
  return failed ? 1 : 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  console.error(`secrets:rotate failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
