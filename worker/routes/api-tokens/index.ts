import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { accountWide, isTeamBound, requireAuth, teamBoundRefusal } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { createApiToken, listApiTokens, revokeApiToken } from "../../services/api-tokens/api-tokens";

const tags = ["API tokens"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };

const ApiToken = z
  .object({
    id: z.string(),
    user_id: z.string(),
    team_id: z.string(),
    name: z.string(),
    prefix: z.string().openapi({ description: "the first 12 characters of the token" }),
    last_used_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("ApiToken");

const CreatedApiToken = ApiToken.extend({
  token: z.string().openapi({ description: "the full value: shown this once, stored only hashed" }),
}).openapi("CreatedApiToken");

const CreateApiTokenRequest = z.object({
  name: z.string().trim().min(1).max(100),
  expires_in_days: z
    .union([z.literal(0), z.number().int().min(1).max(3650)])
    .optional()
    .openapi({ description: "1-3650; 0 or omitted: never expires" }),
});

export const apiTokensRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      middleware: [jsonBodyLimit, requireAuth, accountWide("the list of API tokens")],
      operationId: "listApiTokens",
      method: "get",
      path: "/",
      summary:
        "The caller's API tokens (values are never shown again); 403 to an API token or connector session",
      responses: { 200: jsonResponse(z.array(ApiToken), "Tokens"), ...errors(401, 403) },
    }),
    async (c) => c.json(await listApiTokens(serviceContext(c), c.get("caller").user.id), 200),
  )
  .openapi(
    createRoute({
      ...common,
      middleware: [jsonBodyLimit, requireAuth, accountWide("creating an API token")],
      operationId: "createApiToken",
      method: "post",
      path: "/",
      summary: "Create an `ipk_` token bound to the active team (403 to an API token or connector session)",
      request: { body: jsonBody(CreateApiTokenRequest) },
      responses: {
        201: jsonResponse(CreatedApiToken, "Created; `token` is shown only now"),
        ...errors(400, 401, 403),
      },
    }),
    async (c) =>
      c.json(unwrap(await createApiToken(serviceContext(c), c.get("caller"), c.req.valid("json"))), 201),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "revokeApiToken",
      method: "delete",
      path: "/{id}",
      summary:
        "Revoke one of the caller's tokens; its next use is 401. An API token or connector session may revoke only itself (403)",
      request: { params: z.object({ id: z.string().max(64) }) },
      responses: { 200: jsonResponse(StatusBody("deleted"), "Revoked"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      const caller = c.get("caller");
      const { id } = c.req.valid("param");
      // A token may end itself (what one does with a token found leaked), not its user's others.
      if (isTeamBound(caller) && id !== caller.apiTokenId)
        throw teamBoundRefusal(caller, "revoking another token");
      unwrap(await revokeApiToken(serviceContext(c), caller.user.id, id));
      return c.json({ status: "deleted" as const }, 200);
    },
  );
