/** Sizes the spec's Limits table names, in bytes (a "MB" there is a MiB here: the larger reading). */

const MiB = 1024 * 1024;

/** JSON bodies; routes that take files raise their own limit (worker/http/body-limit.ts) */
export const JSON_BODY_MAX_BYTES = 1 * MiB;
/** `POST /api/pods/{name}/files/upload`: the `file` part */
export const FILE_UPLOAD_MAX_BYTES = 32 * MiB;
/** `POST /api/pods/{name}/zip` and `POST /api/pods/from-zip`: the `zip` part */
export const ZIP_UPLOAD_MAX_BYTES = 128 * MiB;
/** room for a multipart body's boundaries, headers and small form fields around its file */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;
/** `POST /api/pods/{name}/backups/import`: the `file` part (spec: "Backup import 2 GB") */
export const BACKUP_IMPORT_MAX_BYTES = 2 * 1024 * MiB;
/** `POST /api/imports`: a paste's source (JSON; larger than other JSON bodies) */
export const IMPORT_BODY_MAX_BYTES = 5 * MiB;
