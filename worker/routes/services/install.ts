import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { installService } from "../../services/services/install";
import { PodParams } from "../pods/schemas";
import { Service, ServiceType, tags } from "./schemas";

export const InstallRequest = z.object({ service_type: ServiceType });

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("services")],
  operationId: "installPodService",
  method: "post",
  path: "/{name}/services",
  summary:
    "Install a database service (202, `installing`; poll the list until `running` or `error`). Build plan or higher, pod running",
  request: { params: PodParams, body: jsonBody(InstallRequest) },
  responses: { 202: jsonResponse(Service, "Installing"), ...errors(400, 401, 402, 403, 404, 409, 429, 503) },
});

export function registerInstallPodService(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await installService({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
}
