import { createRoute, z } from "@hono/zod-openapi";
import { PRESET_SLUGS } from "../../../shared/catalog";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { repoLookupLimit } from "../../http/repo-lookup-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { inspectRepository } from "../../services/git/repos";
import { AuthToken, Branch, RepoUrl, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, repoLookupLimit],
  operationId: "inspectRepo",
  method: "get",
  path: "/repos/inspect",
  summary: "What a repository's files say about building and running it (detected on a host)",
  request: {
    query: z.object({
      repo_url: RepoUrl,
      branch: Branch.optional().openapi({ description: "default main" }),
      auth_token: AuthToken.optional(),
    }),
  },
  responses: {
    200: jsonResponse(
      z.object({
        preset: z.enum(PRESET_SLUGS),
        install_command: z.string().nullable(),
        build_command: z.string().nullable(),
        start_command: z.string().nullable(),
        port: z.number().int(),
      }),
      "Detected commands",
    ),
    ...errors(400, 401, 403, 404, 413, 422, 429, 503),
  },
});

export function registerInspectRepo(app: Router) {
  app.openapi(route, async (c) =>
    c.json(unwrap(await inspectRepository({ ctx: serviceContext(c), input: c.req.valid("query") })), 200),
  );
}
