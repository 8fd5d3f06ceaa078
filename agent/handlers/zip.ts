import { deployArchive } from "../zip/deploy";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/**
 * `pod.zip.deploy`: a ZIP re-upload replacing ~/app (agent/zip/deploy.ts). Under the pod's lock, so a
 * stop, a reload or a second upload waits until the swap is done. `pod.create` unpacks its seed with
 * the same function (agent/pods/create.ts).
 */
export function zipHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, "pod.zip.deploy"> {
  const prefix = deps.config.namePrefix;
  const exec = podStreams(deps);
  return {
    "pod.zip.deploy": guard("pod.zip.deploy", ({ name, blobKey }, ctx) =>
      locks.run(name, () => deployArchive({ exec, blobs: deps.blobs, prefix }, name, blobKey, ctx.signal)),
    ),
  };
}
