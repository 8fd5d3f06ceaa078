import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, type Router, serviceContext } from "../../http/router";
import { attachmentDisposition, downloadPodFile } from "../../services/files/transfer";
import { PodParams } from "../pods/schemas";
import { PathQuery } from "./schemas";

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "downloadPodFile",
  method: "get",
  path: "/{name}/files/download",
  summary: "Download a file's raw bytes",
  request: { params: PodParams, query: PathQuery("the file") },
  responses: {
    200: {
      description: "The file, with `Content-Disposition: attachment` and its `Content-Length`",
      content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...errors(400, 401, 403, 404, 409, 413, 429, 503),
  },
});

export function registerDownloadPodFile(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    // waitUntil only for the host's closing answer of a transfer that lives and dies with this
    // response (best effort: the relay has ended the transfer either way).
    const file = unwrap(
      await downloadPodFile({
        ctx: serviceContext(c),
        teamId: c.get("caller").teamId,
        input,
        background: (work) => c.executionCtx.waitUntil(work),
      }),
    );
    return c.body(file.body, 200, {
      "content-type": "application/octet-stream",
      ...(file.size === undefined ? {} : { "content-length": String(file.size) }),
      "content-disposition": attachmentDisposition(file.filename),
      "x-content-type-options": "nosniff",
    });
  });
}
