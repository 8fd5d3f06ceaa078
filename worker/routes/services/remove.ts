import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { removeService } from "../../services/services/remove";
import { ServiceParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "removePodService",
  method: "delete",
  path: "/{name}/services/{serviceType}",
  summary: "Remove the service and its data (409 while it is still installing)",
  request: { params: ServiceParams },
  responses: {
    200: jsonResponse(z.object({ status: z.literal("deleted") }), "Removed"),
    ...errors(400, 401, 404, 409, 503),
  },
});

export function registerRemovePodService(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await removeService({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
