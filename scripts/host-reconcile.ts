/**
 * One pass of the reconciler over a host (docs/reliability.md "Drift"): what the host holds under
 * its name prefix (containers, sidecars, build and other helper containers, networks, volumes, pod
 * subvolumes, vhosts, git records) and what R2 holds for its pods (backup archives, staged blobs)
 * against the records in D1. Orphans older than the grace period are removed where that loses no
 * data, the rest reported; pods whose container is gone are marked `error`. Prints every finding
 * and what was done. With --dry-run nothing changes.
 *
 *   npm run host:reconcile -- <name or id> [--dry-run] [--grace-minutes 10] [--json] [--remote]
 *     [--persist-to <dir>] [--api <Worker URL>]
 *
 * Goes through the Worker (`POST /operator/hosts/{host}/reconcile`, docs/operations.md) with an
 * operator token minted into D1 for the run and deleted after it, like `host:drain --evacuate`. The
 * Worker's URL: --api, else PODHOST_API_URL, else http://127.0.0.1:8787 (`npm start`). Exit status:
 * 0 when the pass ran, 1 when it could not (the host's agent is away, the request failed), 2 for
 * bad arguments.
 */
import { parseArgs } from "node:util";
import { mintOperatorToken, revokeOperatorToken } from "./lib/operator";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "dry-run": { type: "boolean", default: false },
    "grace-minutes": { type: "string" },
    json: { type: "boolean", default: false },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
    api: { type: "string" },
  },
});

const host = positionals[0];
const grace = values["grace-minutes"];
const graceOk = grace === undefined || (/^\d{1,4}(\.\d{1,3})?$/.test(grace) && Number(grace) <= 1440);
if (!host || positionals.length > 1 || !graceOk) {
  console.error(
    "usage: npm run host:reconcile -- <host name or id> [--dry-run] [--grace-minutes 0-1440] [--json] [--remote] [--api <url>]",
  );
  process.exit(2);
}

interface Finding {
  kind: string;
  name: string;
  pod: string | null;
  action: "removed" | "would_remove" | "young" | "reported" | "failed";
  detail: string;
}
interface Report {
  host: string;
  dry_run: boolean;
  grace_ms: number;
  findings: Finding[];
  missing: { pod: string; action: string }[];
}

const VERB: Record<Finding["action"], string> = {
  removed: "removed",
  would_remove: "would remove",
  young: "left (young)",
  reported: "REPORTED",
  failed: "FAILED to remove",
};

async function main(): Promise<number> {
  const api = values.api ?? process.env.PODHOST_API_URL ?? "http://127.0.0.1:8787";
  const target = { remote: values.remote, persistTo: values["persist-to"] };
  const operator = await mintOperatorToken(target);
  try {
    const url = new URL(`/operator/hosts/${encodeURIComponent(host as string)}/reconcile`, api);
    if (values["dry-run"]) url.searchParams.set("dry_run", "true");
    if (grace !== undefined) url.searchParams.set("grace_s", String(Math.round(Number(grace) * 60)));
    const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${operator.token}` } });
    const body = (await res.json().catch(() => ({}))) as Partial<Report> & { error?: string };
    if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
    const report = body as Report;
    if (values.json) {
      console.log(JSON.stringify(report, null, 2));
      return 0;
    }
    for (const f of report.findings) console.log(`${VERB[f.action]} ${f.kind} ${f.name}: ${f.detail}`);
    for (const m of report.missing)
      console.log(`pod ${m.pod} has no container on the host: ${m.action.replaceAll("_", " ")}`);
    const count = (a: Finding["action"]) => report.findings.filter((f) => f.action === a).length;
    console.log(
      `host ${report.host}${report.dry_run ? " (dry run: nothing changed)" : ""}: ${report.findings.length} orphan(s): ` +
        `${count(report.dry_run ? "would_remove" : "removed")} ${report.dry_run ? "to remove" : "removed"}, ` +
        `${count("reported")} reported, ${count("young")} younger than ${report.grace_ms / 60_000} min, ` +
        `${count("failed")} failed; ${report.missing.length} pod(s) without their container`,
    );
    return 0;
  } finally {
    await revokeOperatorToken(operator.id, target).catch(() => undefined);
  }
}

try {
  process.exit(await main());
} catch (error) {
  console.error(`host:reconcile failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
