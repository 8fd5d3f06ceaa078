import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listServices } from "../../services/services/list";
import { PodParams } from "../pods/schemas";
import { Service, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodServices",
  method: "get",
  path: "/{name}/services",
  summary: "The pod's database services; [] when none",
  request: { params: PodParams },
  responses: { 200: jsonResponse(z.array(Service), "The services"), ...errors(401, 404) },
});

export function registerListPodServices(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await listServices({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
