import { createRoute } from "@hono/zod-openapi";
import { feedbackBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { rateLimit } from "../../http/rate-limit";
import { errors, jsonBody, jsonResponse, type Router, serviceContext } from "../../http/router";
import { submitFeedback } from "../../services/feedback/submit";
import { FeedbackComment, FeedbackSubmission, TokenParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: [],
  middleware: [feedbackBodyLimit, rateLimit("feedback")],
  operationId: "submitFeedback",
  method: "post",
  path: "/api/feedback/{token}",
  summary:
    "Public (the widget, from the pod's pages; CORS without credentials): a visitor's comment, `comment` and a `name` or `email` required. 404 for an unknown token and a disabled collection alike; rate limited per IP",
  request: { params: TokenParams, body: jsonBody(FeedbackSubmission) },
  responses: {
    201: jsonResponse(FeedbackComment, "The stored comment"),
    ...errors(400, 404, 409, 413, 429),
  },
});

export function registerSubmitFeedback(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(unwrap(await submitFeedback({ ctx: serviceContext(c), input })), 201);
  });
}
