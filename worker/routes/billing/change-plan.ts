import { createRoute } from "@hono/zod-openapi";
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
import { changePlan } from "../../services/billing/subscriptions";
import { PlanSlugBody, Subscription, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "changeSubscriptionPlan",
  method: "put",
  path: "/billing/subscription/plan",
  summary:
    "Change the subscription's plan, at once (pods are charged per day at their own plan, so the change is prorated by construction)",
  request: { body: jsonBody(PlanSlugBody) },
  responses: { 200: jsonResponse(Subscription, "OK"), ...errors(400, 401, 403, 409) },
});

export function registerChangeSubscriptionPlan(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await changePlan({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("json") }),
      ),
      200,
    );
  });
}
