import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import {
  BACKUP_IMPORT_MAX_BYTES,
  FILE_UPLOAD_MAX_BYTES,
  JSON_BODY_MAX_BYTES,
  MULTIPART_OVERHEAD_BYTES,
  ZIP_UPLOAD_MAX_BYTES,
} from "../../shared/limits";

/**
 * Request body limits, one per route: each route lists its limit first in its `middleware: [...]`,
 * before auth and rate limits, so an oversized body is 413 whoever sends it.
 *
 * Two kinds, because they read bodies differently:
 * - `jsonBodyLimit`: JSON bodies are small, held and counted (hono's bodyLimit: the declared length
 *   when there is one, else the body is read up to the limit).
 * - `declaredBodyLimit(max)`: routes that take files read their multipart forms as they arrive
 *   (lib/streamed-form.ts) and count what they read themselves, so only a declared length over
 *   their limit is refused up front. hono's bodyLimit would read a body without a Content-Length
 *   whole into memory to count it.
 */

const tooLarge = (c: Context, maxSize: number) =>
  c.json({ error: `request body too large: the limit is ${maxSize} bytes` }, 413);

export const jsonBodyLimit: MiddlewareHandler = bodyLimit({
  maxSize: JSON_BODY_MAX_BYTES,
  onError: (c) => tooLarge(c, JSON_BODY_MAX_BYTES),
});

export const declaredBodyLimit =
  (maxBytes: number): MiddlewareHandler =>
  (c, next) => {
    const declared = Number(c.req.header("content-length"));
    return declared > maxBytes ? Promise.resolve(tooLarge(c, maxBytes)) : next();
  };

/** `POST /api/pods/{name}/files/upload`: one file part and a few small fields */
export const fileUploadBodyLimit = declaredBodyLimit(FILE_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES);
/** `POST /api/pods/{name}/zip` and `POST /api/pods/from-zip`: one archive part and a few small fields */
export const zipUploadBodyLimit = declaredBodyLimit(ZIP_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES);
/** `POST /api/pods/{name}/backups/import`: one archive part and a note */
export const backupImportBodyLimit = declaredBodyLimit(BACKUP_IMPORT_MAX_BYTES + MULTIPART_OVERHEAD_BYTES);

/** `POST /api/feedback/{token}`: a stranger's comment, whose fields are capped far below this */
export const FEEDBACK_BODY_MAX_BYTES = 32 * 1024;
export const feedbackBodyLimit: MiddlewareHandler = bodyLimit({
  maxSize: FEEDBACK_BODY_MAX_BYTES,
  onError: (c) => tooLarge(c, FEEDBACK_BODY_MAX_BYTES),
});

/**
 * `POST /oauth/register`: a client's self-description (RFC 7591), which the OAuth provider stores as
 * it is for as long as the client lives. A real client's fits in a few hundred bytes.
 */
export const OAUTH_REGISTRATION_MAX_BYTES = 8 * 1024;
export const oauthRegistrationBodyLimit: MiddlewareHandler = bodyLimit({
  maxSize: OAUTH_REGISTRATION_MAX_BYTES,
  onError: (c) => tooLarge(c, OAUTH_REGISTRATION_MAX_BYTES),
});
