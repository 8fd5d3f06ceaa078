import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listDeployments } from "../../services/git/deployments";
import { PodParams } from "../pods/schemas";
import { Deployment, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodDeployments",
  method: "get",
  path: "/pods/{name}/git/deployments",
  summary: "The pod's deployments, newest first, without their logs",
  request: {
    params: PodParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(10) }),
  },
  responses: {
    200: jsonResponse(z.object({ deployments: z.array(Deployment) }), "Deployments"),
    ...errors(400, 401, 404),
  },
});

export function registerListPodDeployments(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await listDeployments({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
