import { createRoute, z } from "@hono/zod-openapi";
import { BACKUP_IMPORT_MAX_BYTES } from "../../../shared/limits";
import { backupImportBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { importBackup } from "../../services/backups/import";
import { NOTE_MAX } from "../../services/backups/records";
import { PodParams } from "../pods/schemas";
import { Backup, tags } from "./schemas";

/**
 * Documented from zod but referenced, not inlined: an inlined zod form would be validated up front,
 * which means reading it whole; the service streams the file into storage as it arrives.
 */
const ImportForm = z
  .object({
    file: z.string().openapi({
      type: "string",
      format: "binary",
      description: `the backup archive (\`.tar.gz\`, as download hands it out), at most ${BACKUP_IMPORT_MAX_BYTES / 1024 ** 3} GB`,
    }),
    note: z.string().max(NOTE_MAX).optional(),
  })
  .openapi("BackupImportForm");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [backupImportBodyLimit, requireAuth, fairShareLimit("backup")],
  operationId: "importPodBackup",
  method: "post",
  path: "/pods/{name}/backups/import",
  summary:
    "Import a `.tar.gz` as a backup of the pod (202, `in_progress` until a test-restore on the pod's host passes; it counts against the plan's limit)",
  request: {
    params: PodParams,
    body: {
      required: true,
      content: { "multipart/form-data": { schema: { $ref: "#/components/schemas/BackupImportForm" } } },
    },
  },
  responses: {
    202: jsonResponse(Backup, "Accepted"),
    ...errors(400, 401, 403, 404, 409, 413, 415, 429, 503),
  },
});

export function registerImportPodBackup(app: Router) {
  app.openapi(route, async (c) => {
    const form = { body: c.req.raw.body, contentType: c.req.header("content-type") };
    const input = { ...c.req.valid("param"), form };
    return c.json(
      unwrap(await importBackup({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
  app.openAPIRegistry.register("BackupImportForm", ImportForm);
}
