import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { resizePod } from "../../services/pods/resize";
import { Pod, PodParams } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "resizePod",
  method: "post",
  path: "/{name}/resize",
  summary: "Move a pod to another plan; its limits change on the running container",
  request: {
    params: PodParams,
    body: jsonBody(z.object({ plan_slug: z.string().max(40).openapi({ example: "build" }) })),
  },
  responses: { 200: jsonResponse(Pod, "The resized pod"), ...errors(400, 401, 402, 404, 409, 429, 503) },
});

export function registerResizePod(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await resizePod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
