import { createRoute, z } from "@hono/zod-openapi";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listCredits } from "../../services/billing/credits";
import { Credit, tags } from "./schemas";

const CreditsBody = z.object({ available: z.number().int(), credits: z.array(Credit) });

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "listCredits",
  method: "get",
  path: "/billing/credits",
  summary: "The team's credits and what is still available (unexpired remaining, in cents)",
  responses: { 200: jsonResponse(CreditsBody, "OK"), ...errors(401) },
});

export function registerListCredits(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(await listCredits({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }), 200);
  });
}
