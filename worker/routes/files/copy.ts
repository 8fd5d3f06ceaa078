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
  StatusBody,
  serviceContext,
} from "../../http/router";
import { movePodPath } from "../../services/files/tree";
import { PodParams } from "../pods/schemas";
import { PodPath } from "./schemas";

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "copyPodPath",
  method: "post",
  path: "/{name}/files/copy",
  summary: "Copy a file or directory (recursively)",
  description:
    "Symlinks are copied as links, modes and times kept; `dest_path` must not exist (409), its parents are created",
  request: {
    params: PodParams,
    body: jsonBody(z.object({ source_path: PodPath("the source"), dest_path: PodPath("the destination") })),
  },
  responses: {
    200: jsonResponse(
      StatusBody("copied").extend({ source_path: z.string(), dest_path: z.string() }),
      "Copied",
    ),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerCopyPodPath(app: Router) {
  app.openapi(route, async (c) => {
    const { name } = c.req.valid("param");
    const body = c.req.valid("json");
    const input = { name, mode: "copy" as const, from: body.source_path, to: body.dest_path };
    const copied = unwrap(
      await movePodPath({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input }),
    );
    return c.json({ status: "copied" as const, source_path: copied.from, dest_path: copied.to }, 200);
  });
}
