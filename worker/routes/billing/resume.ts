import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { resumeSubscription } from "../../services/billing/suspension";
import { Subscription, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "resumeSubscription",
  method: "post",
  path: "/billing/subscription/resume",
  summary:
    "Move past_due or suspended back to active once every unpaid invoice is paid (409 {error, unpaid_invoices} otherwise), starting the pods the suspension stopped; never undoes a cancellation",
  responses: { 200: jsonResponse(Subscription, "OK"), ...errors(401, 403, 409) },
});

export function registerResumeSubscription(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(await resumeSubscription({ ctx: serviceContext(c), caller: c.get("caller"), input: {} })),
      200,
    );
  });
}
