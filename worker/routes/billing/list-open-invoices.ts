import { createRoute, z } from "@hono/zod-openapi";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listOpenInvoices } from "../../services/billing/invoices";
import { Invoice, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "listOpenInvoices",
  method: "get",
  path: "/billing/invoices/open",
  summary: "The invoices still to be paid, oldest first ([] when none)",
  responses: { 200: jsonResponse(z.array(Invoice), "OK"), ...errors(401) },
});

export function registerListOpenInvoices(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      await listOpenInvoices({ ctx: serviceContext(c), caller: c.get("caller"), input: {} }),
      200,
    );
  });
}
