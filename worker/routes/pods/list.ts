import { createRoute } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listPods } from "../../services/pods/list";
import { Paging, PodList } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPods",
  method: "get",
  path: "/",
  summary: "The active team's pods, newest first",
  request: { query: Paging },
  responses: { 200: jsonResponse(PodList, "Pods"), ...errors(400, 401) },
});

export function registerListPods(app: Router) {
  app.openapi(route, async (c) =>
    c.json(
      await listPods({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input: c.req.valid("query") }),
      200,
    ),
  );
}
