import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { payInvoice } from "../../services/billing/invoices";
import { Invoice, InvoiceParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "payInvoice",
  method: "post",
  path: "/billing/invoices/{invoiceId}/pay",
  summary:
    "Charge an open invoice to the default card now: 200 paid; 400 when it fails (with hosted_invoice_url when the charge reached Stripe and was refused there); 403 for another team's",
  request: { params: InvoiceParams },
  responses: { 200: jsonResponse(Invoice, "OK"), ...errors(400, 401, 403, 404, 409) },
});

export function registerPayInvoice(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await payInvoice({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("param") }),
      ),
      200,
    );
  });
}
