import { createRoute } from "@hono/zod-openapi";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { getInvoice } from "../../services/billing/invoices";
import { InvoiceDetail, InvoiceParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [requireAuth],
  operationId: "getInvoice",
  method: "get",
  path: "/billing/invoices/{invoiceId}",
  summary: "An invoice with its lines (one per pod); 403 for another team's",
  request: { params: InvoiceParams },
  responses: { 200: jsonResponse(InvoiceDetail, "OK"), ...errors(401, 403, 404) },
});

export function registerGetInvoice(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await getInvoice({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("param") }),
      ),
      200,
    );
  });
}
