import { applyFix } from "../health/fix";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/**
 * A diagnosis's one-click fix, under the pod's lock (it edits files and restarts the app, like a
 * reload). Whatever the outcome, the health watch forgets what it last said about the pod, so its
 * next look is reported even when the verdict is the same as before (the control plane cleared it).
 */
export function healthHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, "pod.health.fix"> {
  const prefix = deps.config.namePrefix;
  return {
    "pod.health.fix": guard("pod.health.fix", ({ name, preset, action }) =>
      locks.run(name, async () => {
        try {
          return await applyFix(deps.docker, prefix, name, preset, action, deps.log);
        } finally {
          deps.health?.forget(name);
        }
      }),
    ),
  };
}
