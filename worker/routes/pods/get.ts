import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getPodLive } from "../../services/pods/power";
import { Pod, PodParams } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPod",
  method: "get",
  path: "/{name}",
  summary: "One pod, with its status as its host sees it now",
  request: { params: PodParams },
  responses: { 200: jsonResponse(Pod, "The pod"), ...errors(401, 404, 429, 503) },
});

export function registerGetPod(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getPodLive({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
