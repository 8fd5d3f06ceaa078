import { and, eq, inArray, isNull, ne } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Db } from "../../db/client";
import { backups, pods } from "../../db/schema";
import type { Bindings } from "../../env";
import { rangedBody } from "../blobs/ranged-get";
import { putStream } from "../blobs/stream-put";
import { ARCHIVE_MAX_BYTES } from "./records";

/**
 * A backup's bytes as a host reaches them (routes/agent-backups.ts, host token). A host reaches only
 * the backups of pods it holds; anything else is the same 404.
 */

const BACKUP_ID = /^bk_[A-Za-z0-9]{8,40}$/;
const NOT_FOUND = "no such backup on this host";

/**
 * `PUT /agent/backups/{id}`: the archive as the host makes it, streamed into R2 (counted and hashed,
 * never held). Only for a host-made backup still waiting for its archive (in progress, not yet
 * checked): an import's bytes are the importer's, and a checked archive is never replaced. A
 * retried PUT replaces the object; a broken body stores nothing (the earlier upload, if any, stays).
 */
export async function receiveArchive(
  env: Bindings,
  db: Db,
  hostId: string,
  id: string,
  body: ReadableStream<Uint8Array> | null,
): Promise<Result<{ bytes: number; sha256: string }>> {
  if (!BACKUP_ID.test(id)) return fail("not_found", NOT_FOUND);
  const open = and(
    eq(backups.id, id),
    eq(backups.status, "in_progress"),
    isNull(backups.sha256),
    ne(backups.trigger, "import"),
  );
  const [row] = await db
    .select({ objectKey: backups.objectKey })
    .from(backups)
    .innerJoin(pods, and(eq(pods.id, backups.podId), eq(pods.hostId, hostId)))
    .where(open);
  if (!row) return fail("not_found", NOT_FOUND);
  if (!body) return fail("bad_request", "the archive's bytes are missing");
  const stored = await putStream(env.BLOBS, row.objectKey, body, {
    maxBytes: ARCHIVE_MAX_BYTES,
    tooLarge: () => fail("payload_too_large", `a backup archive holds at most ${ARCHIVE_MAX_BYTES} bytes`),
  }).catch((error: unknown) =>
    fail("bad_request", `the archive broke off: ${error instanceof Error ? error.message : String(error)}`),
  );
  if (!stored.ok) return stored;
  const { size: bytes, sha256 } = stored.value;
  const [recorded] = await db
    .update(backups)
    .set({ uploadedBytes: bytes, uploadedSha256: sha256 })
    .where(open)
    .returning({ id: backups.id });
  if (!recorded) {
    // it ended while the bytes came (failed, swept, its pod deleted): they belong to nobody
    await env.BLOBS.delete(row.objectKey);
    return fail("not_found", NOT_FOUND);
  }
  return ok({ bytes, sha256 });
}

/** `GET /agent/backups/{id}`: the archive of a backup of a pod on this host (restore, test-restore). */
export async function openArchive(
  env: Bindings,
  db: Db,
  hostId: string,
  id: string,
): Promise<Result<{ body: ReadableStream<Uint8Array>; size: number }>> {
  if (!BACKUP_ID.test(id)) return fail("not_found", NOT_FOUND);
  const [row] = await db
    .select({ objectKey: backups.objectKey })
    .from(backups)
    .innerJoin(pods, and(eq(pods.id, backups.podId), eq(pods.hostId, hostId)))
    .where(and(eq(backups.id, id), inArray(backups.status, ["in_progress", "completed"])));
  if (!row) return fail("not_found", NOT_FOUND);
  const object = await env.BLOBS.head(row.objectKey);
  if (!object) return fail("not_found", NOT_FOUND);
  return ok({ body: rangedBody(env.BLOBS, object), size: object.size });
}
