import { fail, ok, type Result } from "../../../shared/errors";
import { FILE_UPLOAD_MAX_BYTES } from "../../../shared/limits";
import { POD_HOME } from "../../../shared/pod-paths";
import { formFailure, readStreamedForm } from "../../lib/streamed-form";
import type { TeamCall } from "../context";
import { podTarget } from "../pods/target";
import { APP_ROOT, podPathOf, uploadNameOf } from "./paths";
import { commitReceived, discardReceived, type Received, receiveInto } from "./receive";

/**
 * `POST …/files/upload`: a multipart form of `file` (at most 32 MiB) and an optional `path` (the
 * target directory), read as it arrives (../../../lib/streamed-form.ts): the file part streams into
 * the pod while the caller is still sending it. The fields may come in any order: a file before its
 * `path` waits in a staging directory of the pod's home and is moved in place once the form is
 * read. The file is put in place only when the whole form came.
 */

/** where a file waits when the form's `path` has not come yet: the pod's home, hidden */
const STAGING_DIR = `${POD_HOME}/.pod/uploads`;

const tooLarge = () =>
  fail(
    "payload_too_large",
    `file: over the upload limit of ${FILE_UPLOAD_MAX_BYTES} bytes (32 MiB); copy larger files over SSH (scp, sftp, rsync)`,
  );

/** the form's `path`, checked; the app root when absent or empty */
const targetDir = (path: string | undefined) => podPathOf("path", path || APP_ROOT);

/** the multipart request, unread: the verb reads it as it arrives */
export interface UploadRequest {
  body: ReadableStream<Uint8Array> | null;
  contentType: string | undefined;
}

export async function uploadPodFile({
  ctx,
  teamId,
  input: { name, form: request },
}: TeamCall<{ name: string; form: UploadRequest }>): Promise<Result<{ status: "uploaded"; path: string }>> {
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) return target;
  const pod = { hostId: target.value.hostId, pod: name, teamId };
  const form = await readStreamedForm<Received & { filename: string }>(request, {
    file: "file",
    fields: ["path"],
    async onFile(part, fieldsSoFar) {
      const filename = uploadNameOf(part.filename);
      if (!filename.ok) return filename;
      let dir = STAGING_DIR;
      if (fieldsSoFar.has("path")) {
        const checked = targetDir(fieldsSoFar.get("path"));
        if (!checked.ok) return checked;
        dir = checked.value;
      }
      const received = await receiveInto(ctx, pod, dir, part.body, {
        maxBytes: FILE_UPLOAD_MAX_BYTES,
        tooLarge,
        sourceFailure: formFailure,
      });
      return received.ok ? ok({ ...received.value, filename: filename.value }) : received;
    },
    discard: (received) => discardReceived(ctx, received),
  });
  if (!form.ok) return form;
  const received = form.value.file;
  const dir = targetDir(form.value.fields.get("path"));
  const path = dir.ok ? podPathOf("path", `${dir.value}/${received.filename}`) : dir;
  if (!path.ok) {
    await discardReceived(ctx, received);
    return path;
  }
  const written = await commitReceived(ctx, received, path.value);
  return written.ok ? ok({ status: "uploaded", path: written.value }) : written;
}
