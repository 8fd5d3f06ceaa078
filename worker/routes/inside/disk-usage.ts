import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { podDiskUsage } from "../../services/inside/runtime";
import { PodParams } from "../pods/schemas";

const DiskUsage = z
  .object({
    used_bytes: z.number().int(),
    limit_bytes: z.number().int().openapi({ description: "the plan's disk" }),
    percent: z.number(),
    paths: z.array(z.object({ path: z.string(), bytes: z.number().int() })).openapi({
      description: "the home's top-level entries, largest first",
    }),
  })
  .openapi("DiskUsage");

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Pods"],
  operationId: "getPodDiskUsage",
  method: "get",
  path: "/{name}/disk-usage",
  summary: "Disk used by the pod's home against the plan's disk",
  request: { params: PodParams },
  responses: { 200: jsonResponse(DiskUsage, "Usage in bytes"), ...errors(401, 404, 409, 429, 503) },
});

export function registerGetPodDiskUsage(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await podDiskUsage({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
