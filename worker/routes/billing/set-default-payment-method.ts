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
import { setDefaultPaymentMethod } from "../../services/billing/payment-methods";
import { PaymentMethod, tags } from "./schemas";

const DefaultBody = z.object({ payment_method_id: z.string().min(1).max(64) });

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "setDefaultPaymentMethod",
  method: "post",
  path: "/billing/payment-methods/default",
  summary: "Make a card the team's default (the one invoices are charged to)",
  request: { body: jsonBody(DefaultBody) },
  responses: { 200: jsonResponse(PaymentMethod, "OK"), ...errors(400, 401, 403, 404) },
});

export function registerSetDefaultPaymentMethod(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await setDefaultPaymentMethod({
          ctx: serviceContext(c),
          caller: c.get("caller"),
          input: c.req.valid("json"),
        }),
      ),
      200,
    );
  });
}
