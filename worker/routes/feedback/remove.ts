import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { deleteFeedback } from "../../services/feedback/remove";
import { FeedbackParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "deletePodFeedback",
  method: "delete",
  path: "/api/pods/{name}/feedback/{id}",
  summary: "Delete a comment; 404 when the id is not of that pod",
  request: { params: FeedbackParams },
  responses: {
    200: jsonResponse(z.object({ ok: z.literal(true) }), "Deleted"),
    ...errors(401, 404),
  },
});

export function registerDeletePodFeedback(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    return c.json(
      unwrap(await deleteFeedback({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
