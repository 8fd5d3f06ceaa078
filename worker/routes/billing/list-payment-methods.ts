import { createRoute, z } from "@hono/zod-openapi";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listPaymentMethods } from "../../services/billing/payment-methods";
import { PaymentMethod, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "listPaymentMethods",
  method: "get",
  path: "/billing/payment-methods",
  summary: "The active team's cards, the default first",
  responses: { 200: jsonResponse(z.array(PaymentMethod), "OK"), ...errors(401) },
});

export function registerListPaymentMethods(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      await listPaymentMethods({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }),
      200,
    );
  });
}
