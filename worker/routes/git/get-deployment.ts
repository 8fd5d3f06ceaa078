import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getDeployment } from "../../services/git/deployments";
import { Deployment, DeploymentIdParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPodDeployment",
  method: "get",
  path: "/pods/{name}/git/deployments/{id}",
  summary: "One deployment with its build log (at most 1 MiB)",
  request: { params: DeploymentIdParams },
  responses: {
    200: jsonResponse(
      Deployment.extend({ build_log: z.string() }).openapi("DeploymentWithLog"),
      "The deployment",
    ),
    ...errors(401, 404),
  },
});

export function registerGetPodDeployment(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getDeployment({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
