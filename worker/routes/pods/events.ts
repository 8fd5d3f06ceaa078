import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listPodEvents } from "../../services/pods/events";
import { Event, PodParams } from "./schemas";

export const EventsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).default(0),
  type: z.string().max(40).optional(),
});

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
    query: EventsQuery,
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
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await listPodEvents({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
