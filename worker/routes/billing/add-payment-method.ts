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
import { addPaymentMethod } from "../../services/billing/payment-methods";
import { PaymentMethod, tags } from "./schemas";

const AddPaymentMethodBody = z.object({
  processor_payment_method_id: z.string().min(1).max(255).openapi({ example: "pm_1Q0PsIJvEtkwdCNY" }),
});

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "addPaymentMethod",
  method: "post",
  path: "/billing/payment-methods",
  summary:
    "Attach a card made with Stripe.js (confirmed against a setup intent); brand, last4 and expiry are read from Stripe. The team's first card becomes its default",
  request: { body: jsonBody(AddPaymentMethodBody) },
  responses: { 201: jsonResponse(PaymentMethod, "Created"), ...errors(400, 401, 403, 409) },
});

export function registerAddPaymentMethod(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await addPaymentMethod({
          ctx: serviceContext(c),
          caller: c.get("caller"),
          input: c.req.valid("json"),
        }),
      ),
      201,
    );
  });
}
