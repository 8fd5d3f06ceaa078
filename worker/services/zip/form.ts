import { fail, ok, type Result } from "../../../shared/errors";
import { ZIP_UPLOAD_MAX_BYTES } from "../../../shared/limits";
import { readStreamedForm, type StreamedForm } from "../../lib/streamed-form";
import { discardStagedBlob } from "../blobs/staging";
import { putStream } from "../blobs/stream-put";
import type { ServiceContext } from "../context";

/**
 * A ZIP upload's form read as it arrives: the `zip` part streams into R2 under the given staging
 * key (the Worker never holds the archive: up to 128 MiB would not fit an isolate), the named text
 * fields are kept whichever side of it they come.
 */

export interface StagedZip {
  key: string;
  size: number;
  /** the part's file name, for events and a generated pod name */
  filename: string;
}

const tooLarge = () =>
  fail(
    "payload_too_large",
    `zip: the archive is over the limit of ${ZIP_UPLOAD_MAX_BYTES / 1024 / 1024} MiB`,
  );

export function stageZipForm(
  ctx: ServiceContext,
  request: { body: ReadableStream<Uint8Array> | null; contentType: string | undefined },
  key: string,
  fields: readonly string[] = [],
): Promise<Result<StreamedForm<StagedZip>>> {
  return readStreamedForm<StagedZip>(request, {
    file: "zip",
    fields,
    async onFile(part) {
      const put = await putStream(ctx.env.BLOBS, key, part.body, {
        maxBytes: ZIP_UPLOAD_MAX_BYTES,
        tooLarge,
      });
      return put.ok ? ok({ key, size: put.value.size, filename: part.filename || "archive.zip" }) : put;
    },
    discard: (zip) => discardStagedBlob(ctx.env, zip.key),
  });
}
