import { createRoute, z } from "@hono/zod-openapi";
import type { TypedResponse } from "hono";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, type Router, serviceContext } from "../../http/router";
import { streamDeploymentLog } from "../../services/git/deployments";
import { DeploymentIdParams, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "streamPodDeploymentLog",
  method: "get",
  path: "/pods/{name}/git/deployments/{id}/log",
  summary:
    "The build log as plain text, streamed while the deployment runs and ended when it is over (`curl -N`)",
  request: { params: DeploymentIdParams },
  responses: {
    200: {
      description: "The log, chunk by chunk as the host sends it",
      content: { "text/plain": { schema: z.string() } },
    },
    ...errors(401, 404),
  },
});

export function registerStreamPodDeploymentLog(app: Router) {
  app.openapi(route, async (c) => {
    const input = c.req.valid("param");
    const stream = unwrap(
      await streamDeploymentLog({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input }),
    );
    // A stream of text: the route's type expects a string body, which a stream is, chunk by chunk.
    // Cloudflare (and wrangler dev, which copies it) gzips text/plain for a client that accepts it,
    // and a gzip stream holds a build's short lines until the build ends: an encoding of its own
    // and no-transform keep each chunk going out as it comes.
    return c.body(stream, 200, {
      "content-type": "text/plain; charset=utf-8",
      "content-encoding": "identity",
      "cache-control": "no-cache, no-transform",
      "x-content-type-options": "nosniff",
    }) as unknown as TypedResponse<string, 200, "text">;
  });
}
