/**
 * Stops new placements on a host (its pods keep running, and their operations work as before), or
 * with --undo lets it take pods again.
 *
 *   npm run host:drain -- <name or id> [--undo] [--remote] [--persist-to <dir>]
 */
import { parseArgs } from "node:util";
import { drainHost } from "./lib/hosts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    undo: { type: "boolean", default: false },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
  },
});

const host = positionals[0];
if (!host || positionals.length > 1) {
  console.error("usage: npm run host:drain -- <host name or id> [--undo] [--remote]");
  process.exit(2);
}
try {
  const drained = !values.undo;
  await drainHost(host, drained, { remote: values.remote, persistTo: values["persist-to"] });
  console.log(
    drained
      ? `host ${host} drained: no new pods are placed on it (undo: npm run host:drain -- ${host} --undo)`
      : `host ${host} takes new pods again`,
  );
} catch (error) {
  console.error(`host:drain failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
