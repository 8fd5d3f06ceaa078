import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { createBackup } from "../../services/backups/create";
import { PodParams } from "../pods/schemas";
import { Backup, Note, tags } from "./schemas";

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("backup")],
  operationId: "createPodBackup",
  method: "post",
  path: "/pods/{name}/backups",
  summary:
    "Back up the pod's files and databases now (202, `in_progress`; `completed` once the archive is stored and a test-restore passed)",
  description:
    "A running pod is read live. A stopped pod is backed up where it lies and stays stopped: on its host, in a short-lived container made like the pod (no network), each database started apart for its dump; a start of the pod meanwhile is 409. 400 for a pod in any other state.",
  request: {
    params: PodParams,
    body: {
      required: false,
      content: { "application/json": { schema: z.object({ note: Note.optional() }).strict() } },
    },
  },
  responses: {
    202: jsonResponse(Backup, "Accepted"),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerCreatePodBackup(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("json") };
    return c.json(
      unwrap(await createBackup({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      202,
    );
  });
}
