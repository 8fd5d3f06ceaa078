import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getBackup } from "../../services/backups/manage";
import { Backup, BackupIdParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPodBackup",
  method: "get",
  path: "/pods/{name}/backups/{id}",
  summary: "One backup",
  request: { params: BackupIdParams },
  responses: { 200: jsonResponse(Backup, "The backup"), ...errors(401, 404) },
});

export function registerGetPodBackup(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getBackup({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
