import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listCodingAgents } from "../../services/coding-agents/list";
import { PodParams } from "../pods/schemas";
import { InstalledAgent, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodAgents",
  method: "get",
  path: "/pods/{name}/agents",
  summary: "The pod's coding agents; [] when none",
  request: { params: PodParams },
  responses: {
    200: jsonResponse(z.object({ agents: z.array(InstalledAgent) }), "The agents"),
    ...errors(401, 404),
  },
});

export function registerListPodAgents(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await listCodingAgents({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
