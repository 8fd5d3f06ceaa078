import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { deployPod } from "../../services/git/deployments";
import { PodParams } from "../pods/schemas";
import { Deployment, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("deploy")],
  operationId: "deployPodGit",
  method: "post",
  path: "/pods/{name}/git/deploy",
  summary:
    "Deploy the configured branch now (202, `deploying`); during another deploy it waits, and a newer trigger supersedes it; 429 once the pod's daily build minutes (by plan) are spent",
  request: { params: PodParams },
  responses: { 202: jsonResponse(Deployment, "Accepted"), ...errors(400, 401, 404, 409, 429) },
});

export function registerDeployPodGit(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await deployPod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
}
