import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { receiveGenericPush, receiveRepohostPush } from "../../services/git/webhooks";
import { Deployment, PushAnswer, tags } from "./schemas";

/**
 * The public push webhooks (no credential: the git host's signature, or the pod's webhook secret,
 * is the authentication). The body is read as text: the signature is over its exact bytes.
 */

const answers = {
  200: jsonResponse(PushAnswer, "Ignored (other branch, [skip deploy], auto_deploy off, ping)"),
  202: jsonResponse(
    Deployment,
    "A deployment was queued, or the one already queued after a running deploy now deploys this push's commit",
  ),
  ...errors(400, 401, 409, 413, 429),
};

const repohostRoute = createRoute({
  tags,
  security: [],
  middleware: [jsonBodyLimit],
  operationId: "receiveRepohostPush",
  method: "post",
  path: "/webhooks/repohost",
  summary:
    "The git host's push hook (GitHub's push payload, X-Hub-Signature-256 with the repository's secret, X-GitHub-Delivery required: a replayed delivery is 409); created by the service on connect",
  request: {
    headers: z.object({
      "x-github-event": z.string().max(100).optional(),
      "x-github-delivery": z.string().max(200).optional(),
      "x-hub-signature-256": z.string().max(200).optional(),
    }),
  },
  responses: answers,
});

const genericRoute = createRoute({
  tags,
  security: [],
  middleware: [jsonBodyLimit],
  operationId: "receiveGenericPush",
  method: "post",
  path: "/webhooks/git/{podName}",
  summary:
    "A generic push webhook: the pod's webhook secret in X-Webhook-Secret (or ?secret=); optional body {ref, commit, message}",
  request: {
    params: z.object({
      podName: z
        .string()
        .max(64)
        .openapi({ param: { name: "podName", in: "path" } }),
    }),
    query: z.object({ secret: z.string().max(200).optional() }),
    headers: z.object({ "x-webhook-secret": z.string().max(200).optional() }),
  },
  responses: answers,
});

export function registerWebhooks(app: Router) {
  app.openapi(repohostRoute, async (c) => {
    const headers = c.req.valid("header");
    const answer = await receiveRepohostPush(serviceContext(c), {
      body: await c.req.text(),
      event: headers["x-github-event"],
      delivery: headers["x-github-delivery"],
      signature: headers["x-hub-signature-256"],
    });
    const a = unwrap(answer);
    return "id" in a ? c.json(a, 202) : c.json(a, 200);
  });
  app.openapi(genericRoute, async (c) => {
    const answer = await receiveGenericPush(serviceContext(c), {
      podName: c.req.valid("param").podName,
      secret: c.req.valid("header")["x-webhook-secret"] ?? c.req.valid("query").secret,
      body: await c.req.text(),
    });
    const a = unwrap(answer);
    return "id" in a ? c.json(a, 202) : c.json(a, 200);
  });
}
