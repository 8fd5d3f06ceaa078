import { createRoute } from "@hono/zod-openapi";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getUpcoming } from "../../services/billing/upcoming";
import { tags, Upcoming } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "getUpcomingInvoice",
  method: "get",
  path: "/billing/upcoming",
  summary:
    "Charges accrued and not yet invoiced, per pod; estimated_total = max(0, subtotal - credits_available)",
  responses: { 200: jsonResponse(Upcoming, "OK"), ...errors(401) },
});

export function registerGetUpcomingInvoice(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(await getUpcoming({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }), 200);
  });
}
