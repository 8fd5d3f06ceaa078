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
import { connectRepository } from "../../services/git/config";
import { PodParams } from "../pods/schemas";
import { AuthToken, Branch, BuildCommand, ConnectedGitConfig, RepoUrl, tags } from "./schemas";

export const ConnectRequest = z.object({
  repo_url: RepoUrl,
  branch: Branch.optional().openapi({ description: "default main" }),
  auth_token: AuthToken.optional(),
  build_command: BuildCommand.optional(),
  auto_deploy: z.boolean().optional().openapi({ description: "deploy on push; default true" }),
});

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "connectPodGit",
  method: "post",
  path: "/pods/{name}/git",
  summary:
    "Connect a repository (for a hosted repository with a token, its push hook is created; the answer carries the generic webhook's secret once)",
  request: { params: PodParams, body: jsonBody(ConnectRequest) },
  responses: { 201: jsonResponse(ConnectedGitConfig, "Connected"), ...errors(400, 401, 404, 409, 503) },
});

export function registerConnectPodGit(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await connectRepository({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      201,
    );
  });
}
