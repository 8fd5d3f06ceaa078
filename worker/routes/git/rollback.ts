import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { rollbackPod } from "../../services/git/deployments";
import { PodParams } from "../pods/schemas";
import { Deployment, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("deploy")],
  operationId: "rollbackPodGit",
  method: "post",
  path: "/pods/{name}/git/rollback",
  summary:
    "Switch back to a kept release (202, a deployment with trigger `rollback`); default the newest successful deployment before the serving one",
  request: {
    params: PodParams,
    body: {
      required: false,
      content: {
        "application/json": {
          schema: z.object({
            deployment_id: z
              .string()
              .max(64)
              .optional()
              .openapi({ description: "default: the previous successful deployment" }),
          }),
        },
      },
    },
  },
  responses: { 202: jsonResponse(Deployment, "Accepted"), ...errors(400, 401, 404, 409, 429) },
});

export function registerRollbackPodGit(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...(c.req.valid("json") ?? {}) };
    return c.json(
      unwrap(await rollbackPod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
}
