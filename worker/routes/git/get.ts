import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getRepository } from "../../services/git/config";
import { PodParams } from "../pods/schemas";
import { GitConfig, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPodGit",
  method: "get",
  path: "/pods/{name}/git",
  summary: "The pod's git configuration, or null when no repository is connected",
  request: { params: PodParams },
  responses: { 200: jsonResponse(GitConfig.nullable(), "The configuration or null"), ...errors(401, 404) },
});

export function registerGetPodGit(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await getRepository({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
