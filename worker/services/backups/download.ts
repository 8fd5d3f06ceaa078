import { fail, ok, type Result } from "../../../shared/errors";
import { Sha256Counter } from "../../lib/sha256";
import { rangedBody } from "../blobs/ranged-get";
import type { TeamCall } from "../context";
import { failBackup, findTeamBackup } from "./records";

/**
 * `GET /api/pods/{name}/backups/{id}/download`: a completed backup's archive streamed from R2, checked
 * on the way. The object's size is compared with the record before a byte is sent; the SHA-256 is
 * computed while the bytes pass, and the last chunk is held back until it matches: on a mismatch the
 * stream is errored before the client has all Content-Length bytes, so it sees a broken transfer,
 * never a clean wrong file. Either mismatch marks the backup failed ("corrupted in storage").
 */

export interface BackupDownload {
  body: ReadableStream<Uint8Array>;
  size: number;
  filename: string;
}

const corrupted = (detail: string) => `corrupted in storage: ${detail}; the backup can no longer be used`;

export async function downloadBackup({
  ctx,
  teamId,
  input,
  background,
}: TeamCall<{ name: string; id: string }> & {
  /** work that must outlive the response (the record of a mismatch found at the stream's end) */
  background: (work: Promise<unknown>) => void;
}): Promise<Result<BackupDownload>> {
  const found = await findTeamBackup(ctx.db, teamId, input.name, input.id);
  if (!found.ok) return found;
  const { pod, backup } = found.value;
  if (backup.status !== "completed" || backup.size === null || backup.sha256 === null)
    return fail(
      "conflict",
      `backup ${backup.id} is ${backup.status}; only a completed backup can be downloaded`,
    );
  const object = await ctx.env.BLOBS.head(backup.objectKey);
  const detail = !object
    ? "the archive is missing"
    : object.size !== backup.size
      ? `the archive holds ${object.size} bytes, the record says ${backup.size}`
      : undefined;
  if (!object || detail) {
    await failBackup(ctx.env, ctx.db, backup.id, corrupted(detail ?? "unreadable"), { from: ["completed"] });
    return fail(
      "conflict",
      `backup ${backup.id} is ${corrupted(detail ?? "unreadable")}; it is now marked failed`,
    );
  }
  const checked = checkedStream(rangedBody(ctx.env.BLOBS, object), backup.size, backup.sha256, (why) => {
    const marking = failBackup(ctx.env, ctx.db, backup.id, corrupted(why), { from: ["completed"] });
    background(marking);
    return marking;
  });
  // FixedLengthStream: the response carries Content-Length, and a stream that errors before the
  // last byte is a truncated transfer to the client.
  const fixed = new FixedLengthStream(backup.size);
  checked.pipeTo(fixed.writable).catch(() => undefined);
  return ok({ body: fixed.readable, size: backup.size, filename: `${pod.name}-${backup.id}.tar.gz` });
}

/** `body` passed through, counted and hashed; the last chunk held until both match. */
export function checkedStream(
  body: ReadableStream<Uint8Array>,
  size: number,
  sha256: string,
  onMismatch: (why: string) => Promise<unknown>,
): ReadableStream<Uint8Array> {
  const hash = new Sha256Counter();
  let held: Uint8Array | undefined;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async transform(chunk, controller) {
        await hash.update(chunk);
        if (held) controller.enqueue(held);
        held = chunk;
      },
      async flush(controller) {
        const bytes = hash.bytes;
        const got = await hash.hex();
        const why =
          bytes !== size
            ? `${bytes} bytes read, the record says ${size}`
            : got !== sha256
              ? `its SHA-256 is ${got}, the record says ${sha256}`
              : undefined;
        if (why) {
          await onMismatch(why).catch(() => undefined);
          controller.error(new Error(`backup archive ${corrupted(why)}`));
          return;
        }
        if (held) controller.enqueue(held);
      },
    }),
  );
}
