import { createRoute, z } from "@hono/zod-openapi";
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
import { writePodFile } from "../../services/files/transfer";
import { PodParams } from "../pods/schemas";
import { PathResult, PodPath } from "./schemas";

export const WriteRequest = z.object({
  path: PodPath("the file; its parent directories are created"),
  content: z.string().openapi({ description: "written as UTF-8, replacing the file atomically" }),
});

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "writePodFile",
  method: "put",
  path: "/{name}/files/content",
  summary: "Write a text file (created or replaced atomically; parent directories are created)",
  request: { params: PodParams, body: jsonBody(WriteRequest) },
  responses: {
    200: jsonResponse(PathResult("saved"), "Saved"),
    ...errors(400, 401, 403, 404, 409, 413, 429, 503),
  },
});

export function registerWritePodFile(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await writePodFile({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
