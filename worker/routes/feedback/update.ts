import { createRoute, z } from "@hono/zod-openapi";
import { FEEDBACK_STATUSES } from "../../db/schema";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { setFeedbackStatus } from "../../services/feedback/update";
import { FeedbackParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "updatePodFeedback",
  method: "patch",
  path: "/api/pods/{name}/feedback/{id}",
  summary: "Triage a comment: `new`, `read` or `resolved`; 404 when the id is not of that pod",
  request: {
    params: FeedbackParams,
    body: jsonBody(z.object({ status: z.enum(FEEDBACK_STATUSES) }).openapi("FeedbackStatusUpdate")),
  },
  responses: {
    200: jsonResponse(z.object({ ok: z.literal(true) }), "Updated"),
    ...errors(400, 401, 404),
  },
});

export function registerUpdatePodFeedback(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await setFeedbackStatus({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
