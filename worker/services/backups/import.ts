import { eq } from "drizzle-orm";
import { fail, ok, type Result } from "../../../shared/errors";
import { BACKUP_IMPORT_MAX_BYTES } from "../../../shared/limits";
import { backups } from "../../db/schema";
import { readStreamedForm } from "../../lib/streamed-form";
import { putStream } from "../blobs/stream-put";
import type { TeamCall } from "../context";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { insertBackup, startBackupWorkflow } from "./create";
import { BUSY, busyWith, countedBackups, NOTE_MAX, planLimit, removeBackups } from "./records";
import { type BackupView, toBackupView } from "./views";

/**
 * `POST /api/pods/{name}/backups/import`: a `.tar.gz` the caller made (or downloaded) becomes one of
 * the pod's backups. The `file` part streams into R2 as it arrives (never held), counted and hashed,
 * its first bytes checked for the gzip magic before anything is stored; past 2 GB it is 413. The
 * record is `in_progress` (trigger `import`) until a test-restore on the pod's host passes
 * (workflows/pod-backup.ts): an archive is checked before it counts. It counts against the plan's
 * limit from the start (403 at the limit, before a byte is read).
 *
 * The row is written before the upload (it is the pod's one-at-a-time lock, and a Worker that dies
 * mid-upload leaves a row the sweep ends, never an object nobody knows); a refused upload removes it.
 */

const GZIP_MAGIC = [0x1f, 0x8b];

export async function importBackup({
  ctx,
  teamId,
  input,
}: TeamCall<{
  name: string;
  form: { body: ReadableStream<Uint8Array> | null; contentType: string | undefined };
}>): Promise<Result<BackupView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  if (!pod.hostId || pod.status === "creating")
    return fail("bad_request", `pod ${pod.name} is not on a host yet; import once it has been created`);
  const limit = planLimit(pod);
  if ((await countedBackups(ctx.db, pod.id)) >= limit)
    return fail(
      "forbidden",
      `pod ${pod.name} has ${limit} backup(s), the limit of the ${pod.planSlug} plan; delete one first (an import counts against it)`,
    );
  if (await busyWith(ctx.db, pod.id)) return fail("conflict", BUSY(pod.name));
  const inserted = await insertBackup(ctx.db, pod, { trigger: "import", note: null });
  if (!inserted.ok) return inserted;
  const row = inserted.value;
  const form = await readStreamedForm<{ bytes: number; sha256: string }>(input.form, {
    file: "file",
    fields: ["note"],
    onFile: (part) =>
      putStream(ctx.env.BLOBS, row.objectKey, part.body, {
        maxBytes: BACKUP_IMPORT_MAX_BYTES,
        tooLarge: () =>
          fail(
            "payload_too_large",
            `file: the archive is over the limit of ${BACKUP_IMPORT_MAX_BYTES / 1024 ** 3} GB`,
          ),
        first: {
          bytes: GZIP_MAGIC.length,
          check: (head) =>
            GZIP_MAGIC.every((b, i) => head[i] === b)
              ? ok(undefined)
              : fail("bad_request", "file: not a .tar.gz (it does not start with the gzip magic bytes)"),
        },
      }).then((put) => (put.ok ? ok({ bytes: put.value.size, sha256: put.value.sha256 }) : put)),
    discard: async () => undefined,
  });
  const note = form.ok ? (form.value.fields.get("note") ?? null) : null;
  const refusal = !form.ok
    ? form
    : note !== null && note.length > NOTE_MAX
      ? fail("bad_request", `note: at most ${NOTE_MAX} characters`)
      : undefined;
  if (refusal) {
    // nothing of a refused import is kept: the row (the object, if it was stored) goes
    await removeBackups(ctx.env, ctx.db, [row]);
    return refusal;
  }
  if (!form.ok) return form;
  const { bytes, sha256 } = form.value.file;
  // The bytes counted on the way in are the record; the test-restore checks the object against them.
  const [stored] = await ctx.db
    .update(backups)
    .set({ note, size: bytes, sha256, uploadedBytes: bytes, uploadedSha256: sha256 })
    .where(eq(backups.id, row.id))
    .returning();
  if (!stored) return fail("not_found", `pod ${pod.name} not found`);
  const started = await startBackupWorkflow(ctx.env, ctx.db, stored);
  return started.ok ? ok(toBackupView(started.value, pod.name)) : started;
}
