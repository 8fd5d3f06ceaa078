import { installService, removeService } from "../services/sidecars";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

type ServiceOps = "service.install" | "service.remove";

/**
 * Database services (docs/services.md, agent/services/). Under the pod's lock: an install, a
 * removal and the pod's start/stop/resize/delete never interleave.
 */
export function serviceHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, ServiceOps> {
  return {
    "service.install": guard("service.install", (p, ctx) =>
      locks.run(p.name, () => installService(deps, p, ctx.signal)),
    ),
    "service.remove": guard("service.remove", (p) =>
      locks.run(p.name, async () => {
        await removeService(deps, p);
        return { removed: true as const };
      }),
    ),
  };
}
