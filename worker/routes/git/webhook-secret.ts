import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { revealWebhookSecret } from "../../services/git/config";
import { PodParams } from "../pods/schemas";
import { tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "getPodGitWebhookSecret",
  method: "get",
  path: "/pods/{name}/git/webhook-secret",
  summary:
    "The generic push webhook's URL and secret, when asked (never part of GET /git: the dashboard's Reveal button calls this)",
  request: { params: PodParams },
  responses: {
    200: jsonResponse(
      z
        .object({
          webhook_url: z.string(),
          webhook_secret: z.string().openapi({ description: "send it as X-Webhook-Secret" }),
        })
        .openapi("GitWebhookSecret"),
      "The webhook's URL and secret",
    ),
    ...errors(401, 404, 503),
  },
});

export function registerGetPodGitWebhookSecret(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    c.header("Cache-Control", "no-store");
    return c.json(
      unwrap(await revealWebhookSecret({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
