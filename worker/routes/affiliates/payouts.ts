import { createRoute } from "@hono/zod-openapi";
import { unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listPayouts } from "../../services/affiliates/lists";
import { PageQuery, Payout, paged, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth, accountWide("the affiliate account")],
  operationId: "listAffiliatePayouts",
  method: "get",
  path: "/affiliates/payouts",
  summary: "Payouts recorded by the operator (none can be requested), newest first; 404 before enrolling",
  request: { query: PageQuery },
  responses: {
    200: jsonResponse(paged("payouts", Payout).openapi("AffiliatePayoutsPage"), "OK"),
    ...errors(400, 401, 403, 404),
  },
});

export function registerListAffiliatePayouts(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await listPayouts({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("query") }),
      ),
      200,
    );
  });
}
