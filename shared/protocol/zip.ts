import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * ZIP archives into a pod's ~/app (POST /api/pods/from-zip, POST /api/pods/{name}/zip). The archive
 * itself never crosses the WebSocket: the Worker stages it in R2 and sends its key; the agent fetches
 * it over HTTP (agent/transfer/blobs.ts), checks it again with shared/zip, unpacks it as pod_user into
 * a fresh directory and swaps that in for ~/app, keeping ~/app/.env unless the archive has one.
 * Spread into `ops` in ./ops.ts like ./inside.ts.
 */

/** A staged archive for ~/app; `pod.create` unpacks it before the pod's first start. */
export const ZipSeed = lazy(() => z.object({ blobKey: z.string().min(1).max(200) }));
export type ZipSeed = Built<typeof ZipSeed>;

export const zipOps = {
  /**
   * Replace ~/app with the staged archive's content (running or stopped pod). Nothing changes when
   * any check fails. Does not restart anything: the caller reloads afterwards (`pod.reload`).
   */
  "pod.zip.deploy": () => ({
    params: z.object({ name: PodName, blobKey: ZipSeed().shape.blobKey }),
    result: z.object({ files: z.number().int().min(0), bytes: z.number().int().min(0) }),
  }),
};
