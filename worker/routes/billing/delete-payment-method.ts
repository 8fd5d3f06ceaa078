import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonResponse,
  type Router,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { removePaymentMethod } from "../../services/billing/payment-methods";
import { PaymentMethodParams, tags } from "./schemas";

const DeletedBody = StatusBody("deleted");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "deletePaymentMethod",
  method: "delete",
  path: "/billing/payment-methods/{pmId}",
  summary:
    "Detach a card; when it was the default, the newest other card becomes the default. The last card of a team with pods is 409 (naming them) unless its credits cover the period",
  request: { params: PaymentMethodParams },
  responses: { 200: jsonResponse(DeletedBody, "OK"), ...errors(400, 401, 403, 404, 409) },
});

export function registerDeletePaymentMethod(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await removePaymentMethod({
          ctx: serviceContext(c),
          caller: c.get("caller"),
          input: c.req.valid("param"),
        }),
      ),
      200,
    );
  });
}
