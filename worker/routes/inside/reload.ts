import { createRoute, z } from "@hono/zod-openapi";
import { RELOAD_MAX_OUTPUT_BYTES } from "../../../shared/protocol/inside";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { reloadPodApp } from "../../services/inside/reload";
import { PodParams } from "../pods/schemas";

const ReloadResult = z
  .object({
    status: z.literal("reloaded"),
    services: z.array(z.string()).openapi({ description: "the services restarted", example: ["app"] }),
    preset: z.string(),
    deps_installed: z.enum(["npm", "pip"]).optional().openapi({
      description:
        "set when package.json (npm install, then npm run build if there is a build script) or requirements.txt (~/app/.venv, pip install -r) was installed",
    }),
  })
  .openapi("ReloadResult");

const ReloadFailure = z
  .object({
    error: z.string(),
    deps_output: z.string().openapi({
      description: `the last ${RELOAD_MAX_OUTPUT_BYTES} bytes at most of the failing command's output (all of it is in ~/logs/build.log)`,
    }),
  })
  .openapi("ReloadFailure");

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("reload"), fairShareLimit("ingress")],
  tags: ["Pods"],
  operationId: "reloadPod",
  method: "post",
  path: "/{name}/reload",
  summary:
    "Install the app's dependencies (package.json, requirements.txt) and restart its services; starts a stopped pod first",
  request: { params: PodParams },
  responses: {
    200: jsonResponse(ReloadResult, "Reloaded"),
    // 402: a stopped pod of a suspended team is not started (docs/billing.md)
    ...errors(400, 401, 402, 404, 409, 429, 503),
    500: jsonResponse(ReloadFailure, "The dependency install or build failed"),
  },
});

export function registerReloadPod(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await reloadPodApp({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
