import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { deleteBackup } from "../../services/backups/manage";
import { BackupIdParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "deletePodBackup",
  method: "delete",
  path: "/pods/{name}/backups/{id}",
  summary: "Delete a backup and its archive (409 while it is in progress or being restored)",
  request: { params: BackupIdParams },
  responses: {
    200: jsonResponse(z.object({ status: z.literal("deleted") }), "Deleted"),
    ...errors(401, 404, 409),
  },
});

export function registerDeletePodBackup(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await deleteBackup({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
