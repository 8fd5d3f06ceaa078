import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { verifyDomain } from "../../services/domains/verify";
import { Domain, DomainParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("ingress")],
  operationId: "verifyPodDomain",
  method: "post",
  path: "/{name}/domains/{id}/verify",
  summary:
    "Look up the verification TXT record over DNS-over-HTTPS: `verified` (and served by the pod) when it matches, else 400 saying what was found; 409 when another pod verified the name first. Other pods' pending claims of the name are dropped. On a verified domain (podhost's extension): its certificate's `tls_status` is looked at again, and a failed validation (`failed: …`) is restarted at Cloudflare (503 when Cloudflare cannot be reached)",
  request: { params: DomainParams },
  responses: { 200: jsonResponse(Domain, "Verified"), ...errors(400, 401, 404, 409, 429, 503) },
});

export function registerVerifyPodDomain(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await verifyDomain({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
