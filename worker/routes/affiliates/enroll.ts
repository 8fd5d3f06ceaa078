import { createRoute } from "@hono/zod-openapi";
import { accountWide, requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { enroll } from "../../services/affiliates/enroll";
import { Affiliate, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth, accountWide("the affiliate account")],
  operationId: "enrollAffiliate",
  method: "post",
  path: "/affiliates/enroll",
  summary: "Enroll the caller as an affiliate: 201 the first time, 200 with the same record after",
  responses: {
    200: jsonResponse(Affiliate, "Already enrolled"),
    201: jsonResponse(Affiliate, "Enrolled"),
    ...errors(401, 403),
  },
});

export function registerEnrollAffiliate(app: Router) {
  app.openapi(route, async (c) => {
    const { created, affiliate } = await enroll({
      ctx: serviceContext(c),
      caller: c.get("caller"),
      input: {},
    });
    return created ? c.json(affiliate, 201) : c.json(affiliate, 200);
  });
}
