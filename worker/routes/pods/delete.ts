import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonResponse,
  type Router,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { deletePod } from "../../services/pods/remove";
import { PodParams } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "deletePod",
  method: "delete",
  path: "/{name}",
  summary: "Delete a pod: containers and volumes removed, the name reserved for 7 days",
  request: { params: PodParams },
  responses: { 200: jsonResponse(StatusBody("deleted"), "Deleted"), ...errors(401, 404, 429, 503) },
});

export function registerDeletePod(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    unwrap(await deletePod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input }));
    return c.json({ status: "deleted" as const }, 200);
  });
}
