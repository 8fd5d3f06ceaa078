import { createRoute, z } from "@hono/zod-openapi";
import { FILE_LIST_MAX_ENTRIES } from "../../../shared/protocol/files";
import { jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit } from "../../http/rate-limit";
import { authenticated, errors, jsonResponse, type Router, serviceContext } from "../../http/router";
import { listPodFiles } from "../../services/files/list";
import { APP_ROOT } from "../../services/files/paths";
import { PodParams } from "../pods/schemas";
import { PodPath } from "./schemas";

const FileEntry = z
  .object({
    name: z.string(),
    permissions: z.string().openapi({
      description: "ls style; a symlink's start with `l`",
      example: "-rw-r--r--",
    }),
    size: z
      .string()
      .openapi({ description: "bytes, as a decimal string (a symlink's own length)", example: "1024" }),
    is_dir: z.boolean().openapi({ description: "true for directories and symlinks to directories" }),
  })
  .openapi("FileEntry");

const FileList = z
  .object({ path: z.string(), files: z.array(FileEntry) })
  .openapi("FileList", { description: "directories first, then by name" });

const route = createRoute({
  tags: ["Files"],
  security: authenticated,
  middleware: [jsonBodyLimit, requireAuth, fairShareLimit("files")],
  operationId: "listPodFiles",
  method: "get",
  path: "/{name}/files",
  summary: "List a directory of the pod",
  request: {
    params: PodParams,
    query: z.object({ path: PodPath(`the directory, default ${APP_ROOT}`).optional() }),
  },
  responses: {
    200: jsonResponse(
      FileList,
      `Entries; \`[]\` when the directory is missing. More than ${FILE_LIST_MAX_ENTRIES} entries is 400`,
    ),
    ...errors(400, 401, 403, 404, 409, 429, 503),
  },
});

export function registerListPodFiles(app: Router) {
  app.openapi(route, async (c) => {
    const input = { ...c.req.valid("param"), ...c.req.valid("query") };
    return c.json(
      unwrap(await listPodFiles({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
      200,
    );
  });
}
