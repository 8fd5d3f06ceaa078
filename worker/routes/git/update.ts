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
import { updateRepository } from "../../services/git/config";
import { PodParams } from "../pods/schemas";
import { Branch, BuildCommand, GitConfig, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "updatePodGit",
  method: "put",
  path: "/pods/{name}/git",
  summary: "Change the branch, build command or auto_deploy; only the given fields change",
  request: {
    params: PodParams,
    body: jsonBody(
      z.object({
        branch: Branch.optional(),
        build_command: BuildCommand.optional(),
        auto_deploy: z.boolean().optional(),
      }),
    ),
  },
  responses: { 200: jsonResponse(GitConfig, "The configuration"), ...errors(400, 401, 404) },
});

export function registerUpdatePodGit(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await updateRepository({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
