import type { Bindings } from "../../env";

/**
 * Bytes that must outlive the request that brought them (ZIP archives: from-zip answers 202 before
 * the agent unpacks) are staged in R2 under `staging/{hostId}/{id}`: the Worker writes what a caller
 * sent and the agent fetches it. Only keys travel over the control WebSocket, so no payload of megabytes sits in a Durable
 * Object's memory. File uploads and downloads, which live and die with one request, skip storage
 * and stream through a relay instead (./relay.ts).
 *
 * A staged blob lives for one operation; whoever started the operation discards it, and
 * `sweepStagedBlobs` (cron) removes what a crash left behind.
 */

const PREFIX = "staging/";
/** older than this, a staged blob belongs to no running operation */
export const STAGED_BLOB_TTL_MS = 60 * 60 * 1000;

/** A fresh key owned by `hostId`: only that host's agent can read it. */
export const newStagingKey = (hostId: string): string => `${PREFIX}${hostId}/${crypto.randomUUID()}`;

/**
 * A fresh key no host owns (host ids are `host_…`): for an upload that arrives before its host is
 * chosen (from-zip), handed to the host with `claimStagedBlob` once it is.
 */
export const incomingStagingKey = (): string => `${PREFIX}incoming/${crypto.randomUUID()}`;

/** Whether `key` is a staging key of `hostId` (the agent-facing routes check every key). */
export function hostOwnsStagingKey(hostId: string, key: string): boolean {
  const rest = key.startsWith(`${PREFIX}${hostId}/`) ? key.slice(PREFIX.length + hostId.length + 1) : "";
  return /^[0-9a-f-]{36}$/.test(rest);
}

/**
 * Hand an incoming blob to a host, under `claimed` (a `newStagingKey` of that host's): copied (a
 * native stream of known length, nothing held here), then the incoming key removed. R2 has no
 * rename. Safe to run again: a blob already handed over is left as it is.
 */
export async function claimStagedBlob(env: Bindings, key: string, claimed: string): Promise<void> {
  if (!(await env.BLOBS.head(claimed))) {
    const object = await env.BLOBS.get(key);
    if (!object) throw new Error(`staged blob ${key} is gone`);
    await env.BLOBS.put(claimed, object.body);
  }
  await discardStagedBlob(env, key);
}

/** Best effort: a blob that stays is swept later. */
export async function discardStagedBlob(env: Bindings, key: string): Promise<void> {
  try {
    await env.BLOBS.delete(key);
  } catch (error) {
    console.warn(JSON.stringify({ key, msg: "could not discard staged blob", error: String(error) }));
  }
}

/** Remove staged blobs older than the TTL, a page at a time (cron). Returns how many went. */
export async function sweepStagedBlobs(env: Bindings, now = Date.now()): Promise<number> {
  let removed = 0;
  let cursor: string | undefined;
  do {
    const page = await env.BLOBS.list({ prefix: PREFIX, cursor, limit: 500 });
    const stale = page.objects
      .filter((o) => now - o.uploaded.getTime() > STAGED_BLOB_TTL_MS)
      .map((o) => o.key);
    if (stale.length > 0) await env.BLOBS.delete(stale);
    removed += stale.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return removed;
}
