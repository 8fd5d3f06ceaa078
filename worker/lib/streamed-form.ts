import { fail, ok, type Result } from "../../shared/errors";
import { type FormPart, MultipartError, multipartBoundary, readMultipart } from "./multipart";
import { inLargeChunks } from "./request-body";

/**
 * A multipart form with one file, read as it arrives (./multipart.ts): the file part is handed on
 * as a stream while the caller is still sending it, the named text fields are kept whichever side
 * of the file they come, and every other part is skipped. The file is never held whole.
 */

/** a text field longer than this is refused (a path is at most 4096 bytes) */
const MAX_FIELD_BYTES = 8 * 1024;

export interface StreamedForm<T> {
  /** what `onFile` made of the file part */
  file: T;
  /** the text fields named in the spec that came */
  fields: Map<string, string>;
}

export interface FormSpec<T> {
  /** the file part's name */
  file: string;
  /** the text fields to keep */
  fields: readonly string[];
  /**
   * Take the file part: read `part.body` to its end (or fail). `fieldsSoFar` are the fields that came
   * before it. A failure of the body (a cut-off or malformed form) may be thrown as it came.
   */
  onFile(part: FormPart & { filename: string }, fieldsSoFar: ReadonlyMap<string, string>): Promise<Result<T>>;
  /** undo `onFile`'s work when the form fails after it */
  discard(file: T): Promise<void>;
}

export async function readStreamedForm<T>(
  request: { body: ReadableStream<Uint8Array> | null; contentType: string | undefined },
  spec: FormSpec<T>,
): Promise<Result<StreamedForm<T>>> {
  const boundary = multipartBoundary(request.contentType);
  if (!boundary.ok) return fail("unsupported_media_type", boundary.message);
  const fields = new Map<string, string>();
  let file: { value: T } | undefined;
  const refuse = async (r: Result<never>) => {
    if (file) await spec.discard(file.value);
    return r;
  };
  try {
    const body = request.body ? inLargeChunks(request.body) : new Blob([]).stream();
    for await (const part of readMultipart(body, boundary.boundary)) {
      if (part.name === spec.file) {
        if (part.filename === undefined) {
          return refuse(
            fail(
              "bad_request",
              `${spec.file}: must be a file part of the form (with a filename), not a text field`,
            ),
          );
        }
        if (file) return refuse(fail("bad_request", `${spec.file}: one file per upload`));
        const taken = await spec.onFile({ ...part, filename: part.filename }, fields);
        if (!taken.ok) return taken;
        file = { value: taken.value };
      } else if (part.filename === undefined && spec.fields.includes(part.name)) {
        const text = await fieldText(part);
        if (!text.ok) return refuse(text);
        fields.set(part.name, text.value);
      } else {
        await part.body.cancel(); // not ours: skipped
      }
    }
  } catch (error) {
    return refuse(formFailure(error));
  }
  if (!file) return fail("bad_request", `${spec.file}: is required (a file part of the form)`);
  return ok({ file: file.value, fields });
}

/** The caller's stream failing: a malformed form (or one cut off) is a 400 saying so. */
export function formFailure(error: unknown): Result<never> {
  if (error instanceof MultipartError) return fail("bad_request", error.message);
  const message = error instanceof Error ? error.message : String(error);
  return fail("bad_request", `the request body broke off: ${message}`);
}

async function fieldText(part: FormPart): Promise<Result<string>> {
  const reader = part.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > MAX_FIELD_BYTES) {
      await reader.cancel();
      return fail("bad_request", `${part.name}: at most ${MAX_FIELD_BYTES} bytes`);
    }
    chunks.push(value);
  }
  try {
    const bytes = new Uint8Array(await new Blob(chunks).arrayBuffer());
    return ok(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    return fail("bad_request", `${part.name}: must be UTF-8 text`);
  }
}
