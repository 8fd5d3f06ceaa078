/**
 * Stops new placements on a host (its pods keep running, and their operations work as before), or
 * with --undo lets it take pods again. With --evacuate it then moves every pod of the host to other
 * hosts of its region, one at a time; with --lost (a host that is gone for good) it recreates each
 * of its pods on another host from its latest verified backup. Both wait for every move to end and
 * print what was moved where, each move's measured downtime, and what could not be moved.
 *
 *   npm run host:drain -- <name or id> [--undo | --evacuate | --lost] [--remote] [--persist-to <dir>]
 *     [--api <Worker URL>] [--timeout-minutes 120]
 *
 * --evacuate and --lost go through the Worker (`/operator/hosts/…`, docs/operations.md) with an
 * operator token minted into D1 for the run and deleted after it. The Worker's URL: --api, else
 * PODHOST_API_URL, else http://127.0.0.1:8787 (`npm start`). Exit status: 0 when every pod moved,
 * 1 when one did not (or the request failed), 2 for bad arguments.
 */
import { parseArgs } from "node:util";
import { drainHost } from "./lib/hosts";
import { mintOperatorToken, revokeOperatorToken } from "./lib/operator";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    undo: { type: "boolean", default: false },
    evacuate: { type: "boolean", default: false },
    lost: { type: "boolean", default: false },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
    api: { type: "string" },
    "timeout-minutes": { type: "string", default: "120" },
  },
});

const host = positionals[0];
const modes = [values.undo, values.evacuate, values.lost].filter(Boolean).length;
if (!host || positionals.length > 1 || modes > 1) {
  console.error(
    "usage: npm run host:drain -- <host name or id> [--undo | --evacuate | --lost] [--remote] [--api <url>]",
  );
  process.exit(2);
}
const target = { remote: values.remote, persistTo: values["persist-to"] };

interface Move {
  id: string;
  pod: string;
  status: "queued" | "moving" | "done" | "error" | "skipped";
  to_host: string | null;
  ssh_port: number | null;
  backup_at: string | null;
  downtime_ms: number | null;
  reason: string | null;
}

const ended = (m: Move) => m.status === "done" || m.status === "error" || m.status === "skipped";

function line(m: Move, lost: boolean): string {
  if (m.status === "done")
    return lost
      ? `recreated ${m.pod} on ${m.to_host} (SSH port ${m.ssh_port}) from the backup of ${m.backup_at}`
      : `moved ${m.pod} to ${m.to_host} (SSH port ${m.ssh_port}): down for ${((m.downtime_ms ?? 0) / 1000).toFixed(1)} s`;
  if (m.status === "skipped") return `NOT recreated ${m.pod}: ${m.reason}`;
  return `FAILED ${m.pod}: ${m.reason}`;
}

async function moveAll(lost: boolean): Promise<number> {
  const api = values.api ?? process.env.PODHOST_API_URL ?? "http://127.0.0.1:8787";
  const operator = await mintOperatorToken(target);
  const call = async (method: string, path: string) => {
    const res = await fetch(new URL(`/operator/hosts/${encodeURIComponent(host as string)}${path}`, api), {
      method,
      headers: { authorization: `Bearer ${operator.token}` },
    });
    const body = (await res.json().catch(() => ({}))) as { error?: string; moves?: Move[] };
    if (!res.ok) throw new Error(body.error ?? `${method} ${path}: HTTP ${res.status}`);
    return body.moves ?? [];
  };
  try {
    const started = await call("POST", lost ? "/lost" : "/evacuate");
    if (started.length === 0) {
      console.log(`host ${host} has no pods left to ${lost ? "recreate" : "move"}`);
      return 0;
    }
    console.log(
      `host ${host} drained; ${lost ? "recreating" : "moving"} ${started.length} pod(s) one at a time: ${started.map((m) => m.pod).join(", ")}`,
    );
    const ids = new Set(started.map((m) => m.id));
    const told = new Set<string>();
    const deadline = Date.now() + Number(values["timeout-minutes"]) * 60_000;
    for (;;) {
      // The moves run in the control plane whether or not this command is watching: a poll that gets
      // no answer (a restarting Worker, a network blip) is said and tried again until the deadline.
      const listed = await call("GET", "/moves").catch((error: unknown) => {
        console.error(
          `the API did not answer (${error instanceof Error ? error.message : String(error)}); asking again`,
        );
        return null;
      });
      if (!listed) {
        if (Date.now() > deadline) return 1;
        await new Promise((r) => setTimeout(r, 2000));
        continue;
      }
      const mine = listed.filter((m) => ids.has(m.id));
      for (const m of mine)
        if (ended(m) && !told.has(m.id)) {
          told.add(m.id);
          console.log(line(m, lost));
        }
      if (mine.every(ended)) {
        const done = mine.filter((m) => m.status === "done").length;
        console.log(`${done} of ${mine.length} pod(s) ${lost ? "recreated" : "moved"}`);
        return done === mine.length ? 0 : 1;
      }
      if (Date.now() > deadline) {
        console.error(
          `still under way after ${values["timeout-minutes"]} minutes: ${mine
            .filter((m) => !ended(m))
            .map((m) => m.pod)
            .join(", ")} (the moves go on; see GET /operator/hosts/${host}/moves)`,
        );
        return 1;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await revokeOperatorToken(operator.id, target).catch(() => undefined);
  }
}

try {
  if (values.evacuate || values.lost) process.exit(await moveAll(values.lost));
  const drained = !values.undo;
  await drainHost(host, drained, target);
  console.log(
    drained
      ? `host ${host} drained: no new pods are placed on it (undo: npm run host:drain -- ${host} --undo)`
      : `host ${host} takes new pods again`,
  );
} catch (error) {
  console.error(`host:drain failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
