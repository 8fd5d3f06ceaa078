import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { restoreBackup } from "../../services/backups/restore";
import { BackupIdParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("backup")],
  operationId: "restorePodBackup",
  method: "post",
  path: "/pods/{name}/backups/{id}/restore",
  summary:
    "Restore the pod from a completed backup (202; runs in the background, reported by the restore_* pod events)",
  description:
    "A running pod is restored live (its app's services stopped and started again). A stopped pod is restored where it lies and stays stopped: on its host, in a short-lived container made like the pod (no network), each database started apart to load its dump; a start of the pod meanwhile is 409. 400 for a pod in any other state.",
  request: { params: BackupIdParams },
  responses: {
    202: jsonResponse(
      z.object({ status: z.literal("restoring"), backup_id: z.string() }).openapi("BackupRestoring"),
      "Accepted",
    ),
    ...errors(400, 401, 402, 404, 409, 429, 503),
  },
});

export function registerRestorePodBackup(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await restoreBackup({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
}
