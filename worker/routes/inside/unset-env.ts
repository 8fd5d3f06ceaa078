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
import { unsetPodEnv } from "../../services/inside/env";
import { PodParams } from "../pods/schemas";
import { EnvFile, EnvName } from "./schemas";

const UnsetEnvRequest = z.object({ keys: z.array(EnvName).min(1).max(100) });

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Environment"],
  operationId: "unsetPodEnv",
  method: "delete",
  path: "/{name}/env",
  summary: "Remove variables from the app's .env (restarts the app service like PUT)",
  request: { params: PodParams, body: jsonBody(UnsetEnvRequest) },
  responses: {
    200: jsonResponse(EnvFile, "The variables left"),
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerUnsetPodEnv(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await unsetPodEnv({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
