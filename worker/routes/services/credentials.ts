import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getServiceCredentials } from "../../services/services/credentials";
import { ServiceCredentials, ServiceParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPodServiceCredentials",
  method: "get",
  path: "/{name}/services/{serviceType}/credentials",
  summary: "How the pod's app connects: 127.0.0.1, the port, pod_user and the generated password",
  request: { params: ServiceParams },
  responses: { 200: jsonResponse(ServiceCredentials, "The credentials"), ...errors(400, 401, 404) },
});

export function registerGetPodServiceCredentials(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getServiceCredentials({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
