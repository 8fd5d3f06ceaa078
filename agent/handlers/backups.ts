import { createBackup } from "../backups/create";
import { restoreBackup } from "../backups/restore";
import { verifyBackup } from "../backups/verify";
import { serviceContainersOf } from "../services/sidecars";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/**
 * Backups on the host (agent/backups/, docs/backups.md "On the host"). Create and restore run under the
 * pod's lock, so a deploy, a reload or a stop waits until the archive is made or the restore done
 * (and a start of a stopped pod being backed up or restored in helpers is refused at once: `hold`);
 * verify touches no pod (it runs in a throwaway container of its own) and is serialised per backup.
 */
export function backupHandlers(
  deps: HandlerDeps,
  locks: KeyedLock,
): Pick<HandlerTable, "backup.create" | "backup.verify" | "backup.restore"> {
  const prefix = deps.config.namePrefix;
  const b = {
    docker: deps.docker,
    exec: podStreams(deps),
    store: deps.backups,
    prefix,
    log: deps.log,
    image: deps.config.images.static,
    serviceImages: deps.config.serviceImages,
    // the pod's sidecars, any state (agent/backups/workspace.ts picks the ones it can use)
    sidecars: async (pod: string) =>
      (await serviceContainersOf(deps.docker, prefix, pod)).map((s) => ({
        kind: s.type,
        container: s.container,
        running: s.running,
      })),
  };
  const hold = (pod: string) => (note: string) => locks.hold(pod, note);
  return {
    "backup.create": guard("backup.create", (params, ctx) =>
      locks.run(params.name, () =>
        createBackup({ ...b, log: ctx.log, hold: hold(params.name) }, params, ctx.signal),
      ),
    ),
    "backup.verify": guard("backup.verify", (params, ctx) =>
      locks.run(`backup:${params.backupId}`, () => verifyBackup({ ...b, log: ctx.log }, params, ctx.signal)),
    ),
    "backup.restore": guard("backup.restore", (params, ctx) =>
      locks.run(params.name, () =>
        restoreBackup({ ...b, log: ctx.log, hold: hold(params.name) }, params, ctx.signal),
      ),
    ),
  };
}
