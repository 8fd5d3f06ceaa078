import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { podPreset } from "../../services/inside/runtime";
import { PodParams } from "../pods/schemas";

const PresetView = z
  .object({
    preset: z.string(),
    port: z.number().int(),
    app_root: z.string(),
    public_root: z.string(),
    runtime: z.object({ name: z.string(), version: z.string() }),
    start_command: z.string(),
  })
  .openapi("PodPreset");

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Pods"],
  operationId: "getPodPreset",
  method: "get",
  path: "/{name}/preset",
  summary: "The pod's preset: port, roots, runtime version and start command as the pod has them",
  request: { params: PodParams },
  responses: { 200: jsonResponse(PresetView, "Preset configuration"), ...errors(401, 404, 429, 503) },
});

export function registerGetPodPreset(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await podPreset({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
