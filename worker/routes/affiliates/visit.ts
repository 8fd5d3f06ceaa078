import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { rateLimit } from "../../http/rate-limit";
import { setReferralCookie } from "../../http/referral-cookie";
import { errors, jsonBody, jsonResponse, type Router, serviceContext } from "../../http/router";
import { signedInUserId } from "../../http/signed-in-user";
import { recordVisit } from "../../services/affiliates/visit";
import { tags } from "./schemas";

const VisitBody = z
  .object({ code: z.string().max(64).openapi({ description: "a referral_code or custom_slug" }) })
  .openapi("AffiliateVisit");

const route = createRoute({
  tags,
  security: [],
  middleware: [jsonBodyLimit, rateLimit("affiliateVisit")],
  operationId: "recordAffiliateVisit",
  method: "post",
  path: "/affiliate/visit",
  summary:
    "A click on a referral link: 200 (an unknown code too). A counted click sets the HttpOnly `pod_ref` cookie that attributes a sign-up within 30 days; the affiliate's own signed-in click is ignored. 30 per 10 minutes per IP (429)",
  request: { body: jsonBody(VisitBody) },
  responses: {
    200: jsonResponse(z.object({ status: z.literal("ok") }), "Recorded or ignored, indistinguishably"),
    ...errors(400, 413, 429),
  },
});

export function registerRecordAffiliateVisit(app: Router) {
  app.openapi(route, async (c) => {
    const visitId = await recordVisit({
      ctx: serviceContext(c),
      input: { code: c.req.valid("json").code, signedInUserId: await signedInUserId(c) },
    });
    if (visitId) setReferralCookie(c, visitId);
    return c.json({ status: "ok" as const }, 200);
  });
}
