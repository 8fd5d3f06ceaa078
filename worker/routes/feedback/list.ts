import { createRoute, z } from "@hono/zod-openapi";
import { FEEDBACK_STATUSES } from "../../db/schema";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listFeedback } from "../../services/feedback/list";
import { Paging, PodParams } from "../pods/schemas";
import { FeedbackComment, FeedbackSettings, tags } from "./schemas";

const Query = Paging.extend({ status: z.enum(FEEDBACK_STATUSES).optional() });

const FeedbackList = FeedbackSettings.extend({
  feedback: z.array(FeedbackComment),
  counts: z.object({ new: z.number().int(), read: z.number().int(), resolved: z.number().int() }),
  total: z.number().int().openapi({ description: "comments matching `status` (all when absent)" }),
  limit: z.number().int(),
  offset: z.number().int(),
}).openapi("FeedbackList");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodFeedback",
  method: "get",
  path: "/api/pods/{name}/feedback",
  summary:
    "The pod's visitor feedback, newest first, filtered by `status`; `counts` ignore the filter; with the settings (enabled, token, visibility, share_url)",
  request: { params: PodParams, query: Query },
  responses: { 200: jsonResponse(FeedbackList, "The feedback"), ...errors(400, 401, 404) },
});

export function registerListPodFeedback(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await listFeedback({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
