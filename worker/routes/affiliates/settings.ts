import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { accountWide, requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { updateSettings } from "../../services/affiliates/settings";
import { Affiliate, tags } from "./schemas";

const SettingsBody = z
  .object({
    paypal_email: z.email().max(254).optional(),
    custom_slug: z
      .string()
      .min(3)
      .max(30)
      .regex(/^[a-z0-9-]+$/, "lowercase letters, digits and hyphens only")
      .optional()
      .openapi({ description: "3-30 lowercase letters, digits, hyphens; the referral_code keeps working" }),
  })
  .openapi("AffiliateSettings");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, accountWide("the affiliate account")],
  operationId: "updateAffiliateSettings",
  method: "put",
  path: "/affiliates/settings",
  summary: "Set the PayPal payout email and/or a custom slug (409 when taken)",
  request: { body: jsonBody(SettingsBody) },
  responses: { 200: jsonResponse(Affiliate, "Updated"), ...errors(400, 401, 403, 404, 409) },
});

export function registerUpdateAffiliateSettings(app: Router) {
  app.openapi(route, async (c) => {
    return c.json(
      unwrap(
        await updateSettings({ ctx: serviceContext(c), caller: c.get("caller"), input: c.req.valid("json") }),
      ),
      200,
    );
  });
}
