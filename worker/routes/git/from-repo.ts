import { createRoute, z } from "@hono/zod-openapi";
import { PRESET_SLUGS } from "../../../shared/catalog";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { rateLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { createPodFromRepo } from "../../services/git/from-repo";
import { Pod, PodNameSchema } from "../pods/schemas";
import { AuthToken, Branch, BuildCommand, ConnectedGitConfig, RepoUrl, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, rateLimit("createPod"), requireAuth],
  operationId: "createPodFromRepo",
  method: "post",
  path: "/pods/from-repo",
  summary: "Create a pod from a repository (202 `{pod, git}`; the first deployment starts once the pod runs)",
  request: {
    body: jsonBody(
      z.object({
        repo_url: RepoUrl,
        branch: Branch.optional().openapi({ description: "default main" }),
        name: PodNameSchema.optional().openapi({
          description: "default: the repository's name plus a random tail",
        }),
        preset: z
          .enum(PRESET_SLUGS)
          .optional()
          .openapi({ description: "detected from the repository (GET /api/repos/inspect) when omitted" }),
        plan_slug: z.string().max(40).default("launch"),
        region: z.string().max(40).optional(),
        auth_token: AuthToken.optional(),
        build_command: BuildCommand.optional(),
        auto_deploy: z.boolean().optional(),
      }),
    ),
  },
  responses: {
    202: jsonResponse(z.object({ pod: Pod, git: ConnectedGitConfig }), "Accepted"),
    ...errors(400, 401, 402, 409, 429, 503),
  },
});

export function registerCreatePodFromRepo(app: Router) {
  app.openapi(route, async (c) => {
    const country = (c.req.raw as { cf?: { country?: string } }).cf?.country;
    const created = await createPodFromRepo({
      ctx: serviceContext(c),
      caller: c.get("caller"),
      input: c.req.valid("json"),
      country,
    });
    return c.json(unwrap(created), 202);
  });
}
