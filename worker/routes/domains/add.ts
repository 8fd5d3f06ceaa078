import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { addDomain } from "../../services/domains/add";
import { PodParams } from "../pods/schemas";
import { Domain, tags } from "./schemas";

export const AddDomainRequest = z.object({
  domain: z.string().min(1).max(300).openapi({
    description: "a host name (lowercased; one trailing dot dropped), not under the service's own domain",
    example: "www.example.com",
  }),
});

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "addPodDomain",
  method: "post",
  path: "/{name}/domains",
  summary:
    "Claim a custom domain (pending): publish its `verification` TXT record, then verify; the first pod to verify a name owns it. 409 when a pod has verified it, or this pod has claimed it already",
  request: { params: PodParams, body: jsonBody(AddDomainRequest) },
  responses: { 201: jsonResponse(Domain, "Added, pending verification"), ...errors(400, 401, 404, 409) },
});

export function registerAddPodDomain(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await addDomain({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      201,
    );
  });
}
