import { createRoute } from "@hono/zod-openapi";
import { unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getDashboard } from "../../services/affiliates/dashboard";
import { Dashboard, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth, accountWide("the affiliate account")],
  operationId: "getAffiliateDashboard",
  method: "get",
  path: "/affiliates/dashboard",
  summary:
    "Tier, next tier and progress, pending balance, referral links and visit count; 404 before enrolling",
  responses: { 200: jsonResponse(Dashboard, "OK"), ...errors(401, 403, 404) },
});

export function registerGetAffiliateDashboard(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(await getDashboard({ ctx: serviceContext(c), caller: c.get("caller"), input: {} })),
      200,
    );
  });
}
