import { createRoute, z } from "@hono/zod-openapi";
import { NODE_VERSIONS } from "../../../shared/catalog";
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
import { setNodeVersion } from "../../services/inside/runtime";
import { PodParams } from "../pods/schemas";

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Pods"],
  operationId: "setPodNodeVersion",
  method: "put",
  path: "/{name}/node-version",
  summary: "Switch a Node.js pod to another Node major; restarts the app",
  request: { params: PodParams, body: jsonBody(z.object({ version: z.enum(NODE_VERSIONS) })) },
  responses: {
    200: jsonResponse(z.object({ node_version: z.enum(NODE_VERSIONS) }), "Switched"),
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerSetPodNodeVersion(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await setNodeVersion({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
