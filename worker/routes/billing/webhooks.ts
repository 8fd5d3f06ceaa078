import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { receiveStripeEvent } from "../../services/billing/webhooks";
import { tags } from "./schemas";

const WebhookAnswer = z
  .object({ status: z.enum(["processed", "ignored", "duplicate"]), event_id: z.string() })
  .openapi("StripeWebhookAnswer");

const route = createRoute({
  tags,
  security: [],
  middleware: [jsonBodyLimit],
  operationId: "receiveStripeWebhook",
  method: "post",
  path: "/webhooks/stripe",
  summary:
    "Stripe's event webhook (invoice.paid, invoice.payment_failed, payment_method.*): verified by Stripe-Signature with STRIPE_WEBHOOK_SECRET; an event id seen before is answered `duplicate` and not applied again",
  request: { headers: z.object({ "stripe-signature": z.string().max(2000).optional() }) },
  responses: { 200: jsonResponse(WebhookAnswer, "Applied, ignored or a replay"), ...errors(400, 413) },
});

export function registerStripeWebhook(app: Router) {
  app.openapi(route, async (c) => {
    // The signature is over the exact bytes: the body is read as text, never re-serialized.
    const answer = await receiveStripeEvent(serviceContext(c), {
      body: await c.req.text(),
      signature: c.req.valid("header")["stripe-signature"],
    });
    return c.json(unwrap(answer), 200);
  });
}
