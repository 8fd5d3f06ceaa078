import { createRoute, z } from "@hono/zod-openapi";
import { accountWide, requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listOtherTeamsCards } from "../../services/billing/payment-methods";
import { OtherTeamCard, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth, accountWide("the cards on other teams")],
  operationId: "listOtherTeamsPaymentMethods",
  method: "get",
  path: "/billing/payment-methods/other-teams",
  summary: "The cards the caller added on their other teams (403 to an API token or connector session)",
  responses: { 200: jsonResponse(z.array(OtherTeamCard), "OK"), ...errors(401, 403) },
});

export function registerListOtherTeamsPaymentMethods(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      await listOtherTeamsCards({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }),
      200,
    );
  });
}
