import { createRoute, z } from "@hono/zod-openapi";
import { BACKUP_FREQUENCIES } from "../../db/schema";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { updateSchedule } from "../../services/backups/schedule";
import { PodParams } from "../pods/schemas";
import { BackupSchedule, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth],
  operationId: "updatePodBackupSchedule",
  method: "put",
  path: "/pods/{name}/backups/schedule",
  summary: "Change or disable the backup schedule; only the given fields change",
  request: {
    params: PodParams,
    body: jsonBody(
      z
        .object({
          enabled: z.boolean().optional(),
          frequency: z.enum(BACKUP_FREQUENCIES).optional(),
          retention: z
            .number()
            .int()
            .min(1)
            .optional()
            .openapi({ description: "completed backups to keep, at most the plan's limit (400 above it)" }),
        })
        .strict(),
    ),
  },
  responses: { 200: jsonResponse(BackupSchedule, "The schedule"), ...errors(400, 401, 404) },
});

export function registerUpdatePodBackupSchedule(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await updateSchedule({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
