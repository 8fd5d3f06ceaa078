import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listDomains } from "../../services/domains/list";
import { PodParams } from "../pods/schemas";
import { Domain, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodDomains",
  method: "get",
  path: "/{name}/domains",
  summary: "The pod's custom domains, pending and verified: `{domains}` (`[]` when none)",
  request: { params: PodParams },
  responses: {
    200: jsonResponse(z.object({ domains: z.array(Domain) }).openapi("DomainList"), "The domains"),
    ...errors(401, 404),
  },
});

export function registerListPodDomains(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await listDomains({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
