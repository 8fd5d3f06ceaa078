import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { removeDomain } from "../../services/domains/remove";
import { DomainParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("ingress")],
  operationId: "removePodDomain",
  method: "delete",
  path: "/{name}/domains/{id}",
  summary: "Remove the custom domain; a verified one stops being served first",
  request: { params: DomainParams },
  responses: {
    200: jsonResponse(z.object({ status: z.literal("deleted") }), "Removed"),
    ...errors(401, 404, 409, 429, 503),
  },
});

export function registerRemovePodDomain(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await removeDomain({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
