import { createRoute, z } from "@hono/zod-openapi";
import { LOG_RANGE_MAX_DAYS, LOG_SOURCES } from "../../../shared/protocol/inside";
import { jsonBodyLimit } from "../../http/body-limit";
import { ApiError, unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, errors, type Router, serviceContext } from "../../http/router";
import { followPodLogs } from "../../services/inside/follow";
import { readPodLogs } from "../../services/inside/logs";
import { PodParams } from "../pods/schemas";

export const LogsQuery = z.object({
  source: z.enum(LOG_SOURCES).default("app"),
  lines: z.coerce.number().int().min(1).max(1000).default(100),
  grep: z.string().max(1000).optional().openapi({
    description:
      "PCRE2 (grep -P) pattern; all-lowercase matches case-insensitively, any uppercase letter case-sensitively. Filtered reads return the last matching lines, newest first",
  }),
  since: z.iso
    .datetime({ offset: true })
    .optional()
    .openapi({
      description: `Read the log's history (app, web and error; docs/logs.md) from this time (ISO 8601); default: a day before \`until\`. The range is at most ${LOG_RANGE_MAX_DAYS} days; lines are dated by when the host collected them (every 5 minutes, and at each such read)`,
    }),
  until: z.iso.datetime({ offset: true }).optional().openapi({
    description: "Read the log's history up to this time (ISO 8601); default: now. Not before `since`",
  }),
});

/** The route's query: the read's, and `follow` (an extension to the spec: docs/inside.md). */
const LogsRouteQuery = LogsQuery.extend({
  follow: z.enum(["true", "false"]).default("false").openapi({
    description:
      "true: answer text/event-stream, the last `lines` lines (or matches, oldest first) then each new line as the app writes it, for at most 30 minutes (an extension: see docs/inside.md). Running pod only",
  }),
});

const LogsView = z
  .object({
    source: z.enum(LOG_SOURCES),
    lines: z.array(z.string()).openapi({ description: "unfiltered: oldest first; filtered: newest first" }),
    message: z.literal("no entries").optional(),
    truncated: z.boolean().optional().openapi({
      description:
        "a read of the history (`since`/`until`) that a bound cut short (64 MiB of compressed history, 20 s of searching, 4 MiB of matches): older lines of the range were not searched",
    }),
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
  request: { params: PodParams, query: LogsRouteQuery },
  responses: {
    200: {
      description:
        'Lines; a filtered read with no match carries message "no entries". With `follow=true`, server-sent events: `data: {"source","lines":[…]}` batches, `: keepalive` comments every 15 s, and a last `event: end` with `{"reason"}`',
      content: {
        "application/json": { schema: LogsView },
        "text/event-stream": {
          schema: z.string().openapi({
            example: 'data: {"source":"app","lines":["listening on 8080"]}\n\n: keepalive\n\n',
          }),
        },
      },
    },
    ...errors(400, 401, 404, 409, 429, 503),
  },
});

export function registerGetPodLogs(app: Router) {
  app.openapi(route, async (c) => {
    const { follow, ...query } = c.req.valid("query");
    const input = { ...c.req.valid("param"), ...query };
    if (follow === "true") {
      if (query.since !== undefined || query.until !== undefined) {
        throw new ApiError(
          "bad_request",
          "since, until: not with follow=true (a follow starts at the log's end)",
        );
      }
      const stream = unwrap(
        await followPodLogs({
          ctx: serviceContext(c),
          teamId: c.get("caller").teamId,
          input,
          background: (work) => c.executionCtx.waitUntil(work),
        }),
      );
      return c.body(stream.body, 200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      });
    }
    return c.json(
      unwrap(await readPodLogs({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
