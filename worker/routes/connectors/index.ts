import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { accountWide, isTeamBound, requireAuth, teamBoundRefusal } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { listConnectors, revokeConnector } from "../../services/connectors/grants";

const tags = ["Connectors"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };

const Connector = z
  .object({
    id: z.string().openapi({ example: "cng_0123456789abcdefghjk" }),
    client_id: z.string(),
    client_name: z.string().openapi({ description: "the name the app registered (not verified)" }),
    redirect_host: z.string().openapi({ description: "where the app received its tokens" }),
    team_id: z.string().openapi({ description: "the team it acts on: the one active at consent" }),
    team_name: z.string(),
    last_used_at: z.string().nullable(),
    expires_at: z.string(),
    created_at: z.string(),
  })
  .openapi("Connector");

/**
 * An extension of the spec: the caller's connector grants (OAuth consent given to an AI assistant or
 * another app, docs/connectors.md), and revoking one, which ends every token of it at once.
 */
export const connectorsRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      middleware: [jsonBodyLimit, requireAuth, accountWide("the list of connector grants")],
      operationId: "listConnectors",
      method: "get",
      path: "/",
      summary:
        "The caller's connector grants (apps authorized through OAuth), on every team; 403 to an API token or connector session",
      responses: {
        200: jsonResponse(z.object({ connectors: z.array(Connector) }), "Grants"),
        ...errors(401, 403),
      },
    }),
    async (c) =>
      c.json({ connectors: await listConnectors(serviceContext(c), c.get("caller").user.id) }, 200),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "revokeConnector",
      method: "delete",
      path: "/{id}",
      summary:
        "Revoke one of the caller's connector grants; every token of it is 401 from now on. A connector session may revoke only its own grant, an API token none (403)",
      request: {
        params: z.object({ id: z.string().max(64).openapi({ example: "cng_0123456789abcdefghjk" }) }),
      },
      responses: { 200: jsonResponse(StatusBody("revoked"), "Revoked"), ...errors(401, 403, 404) },
    }),
    async (c) => {
      const caller = c.get("caller");
      const { id } = c.req.valid("param");
      // An app may disconnect itself, not the user's other apps.
      if (isTeamBound(caller) && id !== caller.connectorId) {
        throw teamBoundRefusal(caller, "revoking another connector grant");
      }
      unwrap(await revokeConnector(serviceContext(c), caller.user.id, id));
      return c.json({ status: "revoked" as const }, 200);
    },
  );
