import { createRoute } from "@hono/zod-openapi";
import { POD_PATH_ROOTS } from "../../../shared/pod-paths";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { APP_ROOT } from "../../services/files/paths";
import { deletePodPath } from "../../services/files/tree";
import { PodParams } from "../pods/schemas";
import { PathQuery, PathResult } from "./schemas";

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "deletePodPath",
  method: "delete",
  path: "/{name}/files",
  summary: "Delete a file or a directory (recursively)",
  description: `${POD_PATH_ROOTS.join(", ")} and ${APP_ROOT} themselves cannot be deleted (400)`,
  request: { params: PodParams, query: PathQuery("the file or directory") },
  responses: {
    200: jsonResponse(PathResult("deleted"), "Deleted"),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerDeletePodPath(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await deletePodPath({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
