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
import { subscribe } from "../../services/billing/subscriptions";
import { PlanSlugBody, Subscription, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "subscribe",
  method: "post",
  path: "/billing/subscribe",
  summary: "Subscribe the active team (owner only)",
  request: { body: jsonBody(PlanSlugBody) },
  responses: { 201: jsonResponse(Subscription, "Created"), ...errors(400, 401, 403, 409) },
});

export function registerSubscribe(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await subscribe({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("json") }),
      ),
      201,
    );
  });
}
