import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { rateLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { clonePod } from "../../services/pods/clone";
import { Pod, PodNameSchema, PodParams } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, rateLimit("createPod"), requireAuth],
  operationId: "clonePod",
  method: "post",
  path: "/{name}/clone",
  summary: "Copy a pod (files and environment) into a new pod on the same server",
  request: { params: PodParams, body: jsonBody(z.object({ new_name: PodNameSchema })) },
  responses: { 201: jsonResponse(Pod, "The new pod"), ...errors(400, 401, 402, 404, 409, 429, 503) },
});

export function registerClonePod(app: Router) {
  app.openapi(route, async (c) => {
    const { name } = c.req.valid("param");
    const { new_name } = c.req.valid("json");
    const input = { source: name, new_name };
    return c.json(
      unwrap(await clonePod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      201,
    );
  });
}
