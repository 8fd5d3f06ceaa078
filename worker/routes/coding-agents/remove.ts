import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { removeCodingAgent } from "../../services/coding-agents/remove";
import { AgentParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "removePodAgent",
  method: "delete",
  path: "/pods/{name}/agents/{slug}",
  summary:
    "Remove the agent's package and command from the pod (409 while installing; what its sign-in wrote stays in the pod)",
  request: { params: AgentParams },
  responses: {
    200: jsonResponse(z.object({ status: z.literal("removed") }), "Removed"),
    ...errors(400, 401, 404, 409, 503),
  },
});

export function registerRemovePodAgent(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await removeCodingAgent({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
