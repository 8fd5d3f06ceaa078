import { createRoute, z } from "@hono/zod-openapi";
import { FEEDBACK_VISIBILITIES } from "../../db/schema";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { configureFeedback } from "../../services/feedback/configure";
import { PodParams } from "../pods/schemas";
import { FeedbackSettings, tags } from "./schemas";

const SettingsRequest = z
  .object({
    enabled: z.boolean().optional(),
    visibility: z.enum(FEEDBACK_VISIBILITIES).optional().openapi({
      description: "`everyone`: every visitor sees the widget; `link`: only visitors who opened share_url",
    }),
    rotate: z.boolean().optional().openapi({ description: "a new token: earlier links stop working" }),
  })
  .openapi("FeedbackSettingsRequest");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("ingress")],
  operationId: "updatePodFeedbackSettings",
  method: "post",
  path: "/api/pods/{name}/feedback/settings",
  summary:
    "Enable or disable the widget, choose who sees it, rotate the token; the pod's vhost is rendered again without a restart. 500 (settings unchanged) when it cannot be, e.g. the pod is stopped",
  request: { params: PodParams, body: jsonBody(SettingsRequest) },
  responses: {
    200: jsonResponse(FeedbackSettings, "The settings now in force"),
    ...errors(400, 401, 404, 409, 429, 500, 503),
  },
});

export function registerUpdatePodFeedbackSettings(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await configureFeedback({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
