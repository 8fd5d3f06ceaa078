import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listBackups } from "../../services/backups/manage";
import { PodParams } from "../pods/schemas";
import { BackupList, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodBackups",
  method: "get",
  path: "/pods/{name}/backups",
  summary: "The pod's backups, newest first, with the plan's limit and how many count against it",
  request: { params: PodParams },
  responses: { 200: jsonResponse(BackupList, "Backups"), ...errors(401, 404) },
});

export function registerListPodBackups(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await listBackups({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
