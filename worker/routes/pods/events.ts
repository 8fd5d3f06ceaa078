import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router } from "../../http/router";
import { listEvents } from "../../services/pods/events";
import { findTeamPod } from "../../services/pods/lookup";
import { Event, PodParams } from "./schemas";

const route = createRoute({
  tags: ["Pods"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "listPodEvents",
  method: "get",
  path: "/{name}/events",
  summary: "The pod's activity log, newest first",
  request: {
    params: PodParams,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(200).default(50),
      offset: z.coerce.number().int().min(0).default(0),
      type: z.string().max(40).optional(),
    }),
  },
  responses: {
    200: jsonResponse(
      z.object({
        events: z.array(Event),
        total: z.number().int(),
        limit: z.number().int(),
        offset: z.number().int(),
      }),
      "Events",
    ),
    ...errors(400, 401, 404),
  },
});

export function registerListPodEvents(app: Router) {
  app.openapi(route, async (c) => {
    const found = unwrap(await findTeamPod(c.get("db"), c.get("caller").teamId, c.req.valid("param").name));
    return c.json(await listEvents(c.get("db"), found.pod.id, c.req.valid("query")), 200);
  });
}
