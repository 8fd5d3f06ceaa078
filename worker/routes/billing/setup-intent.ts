import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { createSetupIntent } from "../../services/billing/payment-methods";
import { tags } from "./schemas";

const ClientSecret = z.object({ client_secret: z.string() });

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "createSetupIntent",
  method: "post",
  path: "/billing/setup-intent",
  summary:
    "A Stripe setup intent for the team's customer: the browser confirms a card against its client_secret",
  responses: { 200: jsonResponse(ClientSecret, "OK"), ...errors(400, 401, 403) },
});

export function registerCreateSetupIntent(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(await createSetupIntent({ ctx: serviceContext(c), caller: c.get("caller"), input: {} })),
      200,
    );
  });
}
