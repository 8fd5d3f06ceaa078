import { createRoute } from "@hono/zod-openapi";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getSubscription } from "../../services/billing/subscriptions";
import { Subscription, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "getBillingSubscription",
  method: "get",
  path: "/billing/subscription",
  summary: "The active team's subscription, and whether a payment processor is configured",
  responses: { 200: jsonResponse(Subscription, "OK"), ...errors(401) },
});

export function registerGetBillingSubscription(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(await getSubscription({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }), 200);
  });
}
