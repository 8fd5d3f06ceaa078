import { z } from "zod";
import { lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * The second pass of an evacuation (docs/hosts.md "Emptying a host"): the pod's home was copied to
 * the new host while it still served (`pod.clone.export`, whose `startedAt` is the copy's start on
 * the old host's clock); once it is stopped, only what changed since then travels. The old host
 * packs the entries whose inode changed (ctime, which a tenant cannot set back) since `since`, and
 * the list of every path its home holds; the new host deletes what that list does not name and
 * unpacks the rest. Both run as pod_user in the pod's own view of its home (agent/handlers/moves.ts).
 * Spread into `ops` in ./ops.ts like ./services.ts.
 */

/** names the delta's spool directory in the home (`.pod-move-<id>`): the move's id, lower-cased */
const DeltaId = lazy(() => z.string().regex(/^[a-z0-9_]{1,60}$/));
const BlobKey = lazy(() => z.string().min(1).max(200));
/** `releases.json` holds at most a few small entries; far below this (as ops.ts's) */
const MAX_RELEASES_RECORD = 256 * 1024;

export const movesOps = {
  "pod.move.delta.export": () => ({
    params: z.object({
      name: PodName,
      id: DeltaId(),
      /** the pre-copy's start, ms since the epoch on this host's clock: entries changed since are sent */
      since: z.number().int().min(0),
      blobKey: BlobKey(),
    }),
    result: z.object({
      bytes: z.number().int().min(0),
      /** how many entries changed since the pre-copy */
      changed: z.number().int().min(0),
      /** the host's record of the pod's git releases, as `pod.clone.export`'s */
      releases: z.string().max(MAX_RELEASES_RECORD).nullable(),
    }),
  }),
  "pod.move.delta.apply": () => ({
    params: z.object({
      name: PodName,
      id: DeltaId(),
      blobKey: BlobKey(),
      releases: z.string().max(MAX_RELEASES_RECORD).nullable().optional(),
    }),
    result: z.object({
      /** entries of the pre-copy the old home no longer had, deleted */
      removed: z.number().int().min(0),
    }),
  }),
};
