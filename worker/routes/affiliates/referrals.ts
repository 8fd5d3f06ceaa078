import { createRoute } from "@hono/zod-openapi";
import { unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listReferrals } from "../../services/affiliates/lists";
import { PageQuery, paged, Referral, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth, accountWide("the affiliate account")],
  operationId: "listAffiliateReferrals",
  method: "get",
  path: "/affiliates/referrals",
  summary: "The caller's referrals, newest first, emails masked; 404 before enrolling",
  request: { query: PageQuery },
  responses: {
    200: jsonResponse(paged("referrals", Referral).openapi("AffiliateReferralsPage"), "OK"),
    ...errors(400, 401, 403, 404),
  },
});

export function registerListAffiliateReferrals(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await listReferrals({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("query") }),
      ),
      200,
    );
  });
}
