import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { disconnectRepository } from "../../services/git/config";
import { PodParams } from "../pods/schemas";
import { tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "disconnectPodGit",
  method: "delete",
  path: "/pods/{name}/git",
  summary: "Disconnect the repository: its push hook and the configuration go, the deployed code stays",
  request: { params: PodParams },
  responses: {
    200: jsonResponse(
      z.object({
        status: z.literal("disconnected"),
        webhook_removed: z
          .boolean()
          .openapi({ description: "false when the git host would not delete the hook the service made" }),
      }),
      "Disconnected",
    ),
    ...errors(401, 404),
  },
});

export function registerDisconnectPodGit(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await disconnectRepository({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
