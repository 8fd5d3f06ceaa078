import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router } from "../../http/router";
import { listAgentCatalog } from "../../services/coding-agents/catalog";
import { CatalogAgent, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listAgentCatalog",
  method: "get",
  path: "/agents",
  summary: "The command-line coding agents a pod can install",
  responses: {
    200: jsonResponse(z.object({ agents: z.array(CatalogAgent) }), "The catalog"),
    ...errors(401),
  },
});

export function registerListAgentCatalog(app: Router) {
  app.openapi(route, (c) => c.json(unwrap(listAgentCatalog()), 200));
}
