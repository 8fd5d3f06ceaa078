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
import { createPodFolder } from "../../services/files/tree";
import { PodParams } from "../pods/schemas";
import { PathResult, PodPath } from "./schemas";

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "createPodFolder",
  method: "post",
  path: "/{name}/folders",
  summary: "Create a directory and any missing parents",
  request: { params: PodParams, body: jsonBody(z.object({ path: PodPath("the directory") })) },
  responses: {
    200: jsonResponse(PathResult("created"), "Created (or already there)"),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerCreatePodFolder(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await createPodFolder({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
