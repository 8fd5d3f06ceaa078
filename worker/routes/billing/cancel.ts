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
import { cancelSubscription } from "../../services/billing/subscriptions";
import { tags } from "./schemas";

const CancelledBody = StatusBody("cancelled");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "cancelSubscription",
  method: "post",
  path: "/billing/subscription/cancel",
  summary:
    "Cancel the subscription: every pod of the team must be deleted first (409 names them); owner only",
  responses: { 200: jsonResponse(CancelledBody, "OK"), ...errors(401, 403, 409) },
});

export function registerCancelSubscription(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(await cancelSubscription({ ctx: serviceContext(c), caller: c.get("caller"), input: {} })),
      200,
    );
  });
}
