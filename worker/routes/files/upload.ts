import { createRoute, z } from "@hono/zod-openapi";
import { FILE_UPLOAD_MAX_BYTES } from "../../../shared/limits";
import { fileUploadBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { APP_ROOT } from "../../services/files/paths";
import { uploadPodFile } from "../../services/files/upload";
import { PodParams } from "../pods/schemas";
import { PATH_RULE, PathResult } from "./schemas";

const MiB = 1024 * 1024;

/**
 * Documented from zod but referenced, not inlined: an inlined zod form would be validated up front,
 * which means reading it whole; the service reads it as it arrives (services/files/upload.ts).
 */
const UploadForm = z
  .object({
    file: z.string().openapi({
      type: "string",
      format: "binary",
      description: `at most ${FILE_UPLOAD_MAX_BYTES / MiB} MiB; stored under the part's file name`,
    }),
    path: z
      .string()
      .max(4096)
      .optional()
      .openapi({
        description: `the target directory (created if missing), default ${APP_ROOT}; ${PATH_RULE}. It may come before or after the file`,
      }),
  })
  .openapi("UploadForm");

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [fileUploadBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "uploadPodFile",
  method: "post",
  path: "/{name}/files/upload",
  summary: "Upload a file into a directory of the pod",
  description:
    "The file is written byte for byte under the part's file name, replacing an existing file atomically",
  request: {
    params: PodParams,
    body: {
      required: true,
      content: { "multipart/form-data": { schema: { $ref: "#/components/schemas/UploadForm" } } },
    },
  },
  responses: {
    200: jsonResponse(
      PathResult("uploaded").extend({ path: z.string().openapi({ description: "the file written" }) }),
      "Uploaded",
    ),
    ...errors(400, 401, 403, 404, 409, 413, 415, 429, 503),
  },
});

export function registerUploadPodFile(app: Router) {
  app.openapi(route, async (c) => {
    const { name } = c.req.valid("param");
    const form = { body: c.req.raw.body, contentType: c.req.header("content-type") };
    const input = { name, form };
    return c.json(
      unwrap(await uploadPodFile({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
  app.openAPIRegistry.register("UploadForm", UploadForm);
}
