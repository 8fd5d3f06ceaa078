import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { completeSetupSession, createSetupSession, SESSION_ID } from "../../services/billing/setup-sessions";
import { PaymentMethod, tags } from "./schemas";

const SetupSession = z
  .object({
    id: z.string().openapi({ example: "cs_test_a1b2c3" }),
    url: z.string().openapi({ description: "Stripe's hosted page: send the browser there" }),
  })
  .openapi("SetupSession");

const createRouteDef = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "createSetupSession",
  method: "post",
  path: "/billing/setup-session",
  summary:
    "A Stripe Checkout Session in setup mode for the team's customer (an extension: docs/billing.md): the browser adds a card on Stripe's hosted page at `url`, which returns it to the dashboard's /app/billing/card-added",
  responses: { 201: jsonResponse(SetupSession, "Created"), ...errors(400, 401, 403) },
});

const SessionParam = z.object({
  id: z
    .string()
    .regex(SESSION_ID)
    .openapi({ param: { name: "id", in: "path" }, example: "cs_test_a1b2c3" }),
});

const completeRouteDef = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "completeSetupSession",
  method: "post",
  path: "/billing/setup-session/{id}/complete",
  summary:
    "Record the card a completed setup session saved, as the team's default (an extension: docs/billing.md); a session of another team's customer is 404",
  request: { params: SessionParam },
  responses: { 201: jsonResponse(PaymentMethod, "Created"), ...errors(400, 401, 403, 404, 409) },
});

export function registerSetupSession(app: Router) {
  app.openapi(createRouteDef, async (c) => {
    return c.json(
      unwrap(await createSetupSession({ ctx: serviceContext(c), caller: c.get("caller"), input: {} })),
      201,
    );
  });
  app.openapi(completeRouteDef, async (c) => {
    const { id } = c.req.valid("param");
    return c.json(
      unwrap(
        await completeSetupSession({
          ctx: serviceContext(c),
          caller: c.get("caller"),
          input: { session_id: id },
        }),
      ),
      201,
    );
  });
}
