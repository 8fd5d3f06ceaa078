import { createRoute, z } from "@hono/zod-openapi";
import { LOG_SOURCES } from "../../../shared/protocol/inside";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { readPodLogs } from "../../services/inside/logs";
import { PodParams } from "../pods/schemas";

export const LogsQuery = z.object({
  source: z.enum(LOG_SOURCES).default("app"),
  lines: z.coerce.number().int().min(1).max(1000).default(100),
  grep: z.string().max(1000).optional().openapi({
    description:
      "PCRE2 (grep -P) pattern; all-lowercase matches case-insensitively, any uppercase letter case-sensitively. Filtered reads return the last matching lines, newest first",
  }),
});

const LogsView = z
  .object({
    source: z.enum(LOG_SOURCES),
    lines: z.array(z.string()).openapi({ description: "unfiltered: oldest first; filtered: newest first" }),
    message: z.literal("no entries").optional(),
  })
  .openapi("PodLogs");

const route = createRoute({
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  tags: ["Logs"],
  operationId: "getPodLogs",
  method: "get",
  path: "/{name}/logs",
  summary: "The tail of a pod log, or its last lines matching a PCRE2 pattern",
  request: { params: PodParams, query: LogsQuery },
  responses: {
    200: jsonResponse(LogsView, 'Lines; a filtered read with no match carries message "no entries"'),
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerGetPodLogs(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await readPodLogs({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
