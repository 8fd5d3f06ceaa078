import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getSchedule } from "../../services/backups/schedule";
import { PodParams } from "../pods/schemas";
import { BackupSchedule, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPodBackupSchedule",
  method: "get",
  path: "/pods/{name}/backups/schedule",
  summary: "The pod's backup schedule (default: enabled, daily, the plan's retention)",
  request: { params: PodParams },
  responses: { 200: jsonResponse(BackupSchedule, "The schedule"), ...errors(401, 404) },
});

export function registerGetPodBackupSchedule(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getSchedule({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
