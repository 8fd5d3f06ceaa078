import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, type Router, serviceContext } from "../../http/router";
import { downloadBackup } from "../../services/backups/download";
import { attachmentDisposition } from "../../services/files/transfer";
import { BackupIdParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "downloadPodBackup",
  method: "get",
  path: "/pods/{name}/backups/{id}/download",
  summary: "The archive of a completed backup (`.tar.gz`)",
  description:
    "Streamed from storage and checked on the way: an archive whose size or SHA-256 differs from the record is not sent whole (the transfer breaks off) and the backup is marked failed",
  request: { params: BackupIdParams },
  responses: {
    200: {
      description:
        "The archive, with `Content-Disposition: attachment` (`<pod>-<id>.tar.gz`) and its `Content-Length`",
      content: { "application/gzip": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...errors(401, 404, 409, 429),
  },
});

export function registerDownloadPodBackup(app: Router) {
  app.openapi(route, async (c) => {
    // waitUntil only to mark the backup failed when the hash, known at the stream's end, does not
    // match (best effort: the client already saw a broken transfer, and the next download, restore
    // or test-restore checks the hash again).
    const archive = unwrap(
      await downloadBackup({
        ctx: serviceContext(c),
        teamId: c.get("caller").teamId,
        input: c.req.valid("param"),
        background: (work) => c.executionCtx.waitUntil(work),
      }),
    );
    return c.body(archive.body, 200, {
      "content-type": "application/gzip",
      "content-length": String(archive.size),
      "content-disposition": attachmentDisposition(archive.filename),
      "x-content-type-options": "nosniff",
    });
  });
}
