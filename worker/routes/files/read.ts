import { createRoute, z } from "@hono/zod-openapi";
import { FILE_CONTENT_MAX_BYTES } from "../../../shared/protocol/files";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { readPodFile } from "../../services/files/transfer";
import { PodParams } from "../pods/schemas";
import { PathQuery } from "./schemas";

const MiB = 1024 * 1024;

const FileContent = z.object({ path: z.string(), content: z.string() }).openapi("FileContent");

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "readPodFile",
  method: "get",
  path: "/{name}/files/content",
  summary: "Read a text file",
  description: `UTF-8 text of at most ${FILE_CONTENT_MAX_BYTES / MiB} MiB; other files are 400 (use the download route)`,
  request: { params: PodParams, query: PathQuery("the file") },
  responses: {
    200: jsonResponse(FileContent, "The file's text"),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerReadPodFile(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await readPodFile({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
