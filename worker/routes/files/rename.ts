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
  operationId: "renamePodPath",
  method: "post",
  path: "/{name}/files/rename",
  summary: "Rename or move a file or directory",
  description: "`new_path` must not exist (409); its parent directories are created",
  request: {
    params: PodParams,
    body: jsonBody(z.object({ old_path: PodPath("the source"), new_path: PodPath("the destination") })),
  },
  responses: {
    200: jsonResponse(
      StatusBody("renamed").extend({ old_path: z.string(), new_path: z.string() }),
      "Renamed",
    ),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerRenamePodPath(app: Router) {
  app.openapi(route, async (c) => {
    const { name } = c.req.valid("param");
    const body = c.req.valid("json");
    const input = { name, mode: "rename" as const, from: body.old_path, to: body.new_path };
    const moved = unwrap(
      await movePodPath({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input }),
    );
    return c.json({ status: "renamed" as const, old_path: moved.from, new_path: moved.to }, 200);
  });
}
