import { createRoute, z } from "@hono/zod-openapi";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listInvoices } from "../../services/billing/invoices";
import { Invoice, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "listInvoices",
  method: "get",
  path: "/billing/invoices",
  summary: "The active team's invoices, newest period first",
  responses: { 200: jsonResponse(z.array(Invoice), "OK"), ...errors(401) },
});

export function registerListInvoices(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(await listInvoices({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }), 200);
  });
}
