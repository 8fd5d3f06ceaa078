import { reconcile } from "../reconcile/run";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/**
 * Drift between the host and the control plane's records (agent/reconcile/, docs/reliability.md
 * "Drift"): orphans under the prefix found, removed or reported; pods without a container named.
 */
export function reconcileHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, "host.reconcile"> {
  return {
    "host.reconcile": guard("host.reconcile", (p) => reconcile(deps, locks, p)),
  };
}
