import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getPodEnv } from "../../services/inside/env";
import { PodParams } from "../pods/schemas";
import { EnvFile } from "./schemas";

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Environment"],
  operationId: "getPodEnv",
  method: "get",
  path: "/{name}/env",
  summary: "The app's environment variables, as the pod's .env loader reads them",
  request: { params: PodParams },
  responses: {
    200: jsonResponse(EnvFile, "Variables; `{}` when there is no file"),
    ...errors(401, 404, 409, 429, 503),
  },
});

export function registerGetPodEnv(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getPodEnv({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
