import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { repoLookupLimit } from "../../http/repo-lookup-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listBranches } from "../../services/git/repos";
import { AuthToken, RepoUrl, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, repoLookupLimit],
  operationId: "listRepoBranches",
  method: "get",
  path: "/repos/branches",
  summary: "A repository's branches and its default branch (asked on a host with git ls-remote)",
  request: { query: z.object({ repo_url: RepoUrl, auth_token: AuthToken.optional() }) },
  responses: {
    200: jsonResponse(
      z.object({ branches: z.array(z.string()), default_branch: z.string().nullable() }),
      "Branches",
    ),
    ...errors(400, 401, 403, 404, 413, 422, 429, 503),
  },
});

export function registerListRepoBranches(app: Router) {
  app.openapi(route, async (c) =>
    c.json(unwrap(await listBranches({ ctx: serviceContext(c), input: c.req.valid("query") })), 200),
  );
}
