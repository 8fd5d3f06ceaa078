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
import { setPodEnv } from "../../services/inside/env";
import { PodParams } from "../pods/schemas";
import { EnvFile, EnvName, noNul } from "./schemas";

const EnvValue = z.string().max(32_768).refine(noNul, { message: "must not contain NUL" });

export const SetEnvRequest = z.object({
  vars: z
    .record(EnvName, EnvValue)
    .refine((v) => Object.keys(v).length > 0, { message: "must not be empty" })
    .refine((v) => Object.keys(v).length <= 100, { message: "must have at most 100 variables" })
    .openapi({ description: "merged into the file; any value (newlines, quotes, #) is written quoted" }),
});

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Environment"],
  operationId: "setPodEnv",
  method: "put",
  path: "/{name}/env",
  summary: "Merge variables into the app's .env; restarts the app service of nodejs and python pods",
  request: { params: PodParams, body: jsonBody(SetEnvRequest) },
  responses: {
    200: jsonResponse(
      EnvFile.extend({
        restarted: z.array(z.string()).openapi({ description: '["app"], or [] (static, php, stopped pod)' }),
      }),
      "All variables of the file after the merge",
    ),
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerSetPodEnv(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await setPodEnv({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
