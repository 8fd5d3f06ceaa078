import { createRoute } from "@hono/zod-openapi";
import { unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listEarnings } from "../../services/affiliates/lists";
import { Earning, PageQuery, paged, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth, accountWide("the affiliate account")],
  operationId: "listAffiliateEarnings",
  method: "get",
  path: "/affiliates/earnings",
  summary:
    "Commissions (rate and tier snapshotted at payment time) and tier bonuses, newest first; 404 before enrolling",
  request: { query: PageQuery },
  responses: {
    200: jsonResponse(paged("earnings", Earning).openapi("AffiliateEarningsPage"), "OK"),
    ...errors(400, 401, 403, 404),
  },
});

export function registerListAffiliateEarnings(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await listEarnings({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("query") }),
      ),
      200,
    );
  });
}
