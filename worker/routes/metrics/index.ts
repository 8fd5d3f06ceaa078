import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { authenticated, createRouter, errors, jsonResponse } from "../../http/router";
import {
  latestMetrics,
  MAX_HISTORY_HOURS,
  metricsHistory,
  RAW_HISTORY_HOURS,
} from "../../services/metrics/history";
import { PodParams } from "../pods/schemas";

/**
 * A pod's resource use, mounted at /api/pods beside the pods router: the newest sample and the
 * history. The host's agent samples every running pod (PODHOST_METRICS_INTERVAL_S, default 60 s).
 */

const common = { tags: ["Metrics"], security: authenticated, middleware: [jsonBodyLimit, requireAuth] };

const Metrics = z
  .object({
    cpu_usage: z.number().openapi({
      description: "percent of the pod's own CPU allocation (its plan), averaged over the sampling interval",
      example: 12.5,
    }),
    memory_usage: z.number().openapi({
      description: "percent of the pod's memory limit (its plan); reclaimable page cache not counted",
      example: 38.2,
    }),
    storage_used: z.number().int().openapi({ description: "bytes on disk of the pod's home" }),
    network_in: z
      .number()
      .int()
      .openapi({ description: "bytes received during the interval (an hour for rollups)" }),
    network_out: z
      .number()
      .int()
      .openapi({ description: "bytes sent during the interval (an hour for rollups)" }),
    recorded_at: z.string().openapi({ description: "ISO 8601 UTC; for an hourly rollup the hour's start" }),
  })
  .openapi("Metrics");

const HistoryQuery = z.object({
  hours: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_HISTORY_HOURS)
    .default(24)
    .openapi({
      description: `how far back, 1-${MAX_HISTORY_HOURS} (default 24); up to ${RAW_HISTORY_HOURS} every sample, beyond one record per hour`,
    }),
});

export const metricsRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "getPodMetrics",
      method: "get",
      path: "/{name}/metrics",
      summary: "The pod's newest metrics sample, or null when none was recorded yet",
      request: { params: PodParams },
      responses: {
        200: jsonResponse(Metrics.nullable(), "The newest sample, or null"),
        ...errors(401, 404),
      },
    }),
    async (c) =>
      c.json(
        unwrap(await latestMetrics(c.get("db"), c.get("caller").teamId, c.req.valid("param").name)),
        200,
      ),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "getPodMetricsHistory",
      method: "get",
      path: "/{name}/metrics/history",
      summary: "The pod's metrics of the last hours, oldest first",
      request: { params: PodParams, query: HistoryQuery },
      responses: {
        200: jsonResponse(z.array(Metrics), "Samples (or hourly rollups), oldest first"),
        ...errors(400, 401, 404),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { hours } = c.req.valid("query");
      return c.json(unwrap(await metricsHistory(c.get("db"), c.get("caller").teamId, name, hours)), 200);
    },
  );
