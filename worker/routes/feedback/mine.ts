import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { rateLimit } from "../../http/rate-limit";
import { errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listMyFeedback } from "../../services/feedback/mine";
import { FeedbackComment, TokenParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: [],
  middleware: [jsonBodyLimit, rateLimit("feedbackMine")],
  operationId: "listMyFeedback",
  method: "get",
  path: "/api/feedback/{token}/mine",
  summary:
    "Public (the widget): the comments of one visitor (`submitter`, their submitter_id) on the pod, newest first, at most 100; 404 like the POST",
  request: {
    params: TokenParams,
    query: z.object({
      submitter: z.string().max(64).openapi({ example: "sub_0123456789abcdefghjk" }),
    }),
  },
  responses: {
    200: jsonResponse(z.object({ feedback: z.array(FeedbackComment) }), "The visitor's comments"),
    ...errors(400, 404, 429),
  },
});

export function registerListMyFeedback(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(unwrap(await listMyFeedback({ ctx: serviceContext(c), input })), 200);
  });
}
