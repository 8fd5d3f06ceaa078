import { createRoute, z } from "@hono/zod-openapi";
import { FILE_UPLOAD_MAX_BYTES } from "../../../shared/limits";
import { POD_PATH_ROOTS } from "../../../shared/pod-paths";
import { FILE_CONTENT_MAX_BYTES, FILE_LIST_MAX_ENTRIES } from "../../../shared/protocol/files";
import { fileUploadBodyLimit, jsonBodyLimit } from "../../http/body-limit";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import {
  authenticated,
  createRouter,
  errors,
  jsonBody,
  jsonResponse,
  StatusBody,
  serviceContext,
} from "../../http/router";
import { listPodFiles } from "../../services/files/list";
import { APP_ROOT } from "../../services/files/paths";
import {
  attachmentDisposition,
  downloadPodFile,
  readPodFile,
  writePodFile,
} from "../../services/files/transfer";
import { createPodFolder, deletePodPath, movePodPath } from "../../services/files/tree";
import { uploadPodFile } from "../../services/files/upload";
import { PodParams } from "../pods/schemas";

/**
 * The Files endpoints, mounted at /api/pods beside the pods router. Everything runs as pod_user in
 * the running pod (a stopped pod is 400); file bytes stream through a TransferRelay, never through
 * the host's Durable Object (see services/files/transfer.ts).
 */

const tags = ["Files"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };
const MiB = 1024 * 1024;

const PATH_RULE = `absolute, no \`..\` segments, inside ${POD_PATH_ROOTS.join(", ")}`;
const PodPath = (description: string) =>
  z
    .string()
    .max(4096)
    .openapi({ description: `${description}; ${PATH_RULE}`, example: `${APP_ROOT}/index.html` });
const PathQuery = (description: string) => z.object({ path: PodPath(description) });

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

const FileContent = z.object({ path: z.string(), content: z.string() }).openapi("FileContent");

const WriteRequest = z.object({
  path: PodPath("the file; its parent directories are created"),
  content: z.string().openapi({ description: "written as UTF-8, replacing the file atomically" }),
});

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

const PathResult = <S extends string>(status: S) => StatusBody(status).extend({ path: z.string() });

export const filesRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
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
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const path = c.req.valid("query").path || APP_ROOT;
      return c.json(unwrap(await listPodFiles(serviceContext(c), c.get("caller").teamId, name, path)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "readPodFile",
      method: "get",
      path: "/{name}/files/content",
      summary: "Read a text file",
      description: `UTF-8 text of at most ${FILE_CONTENT_MAX_BYTES / MiB} MiB; other files are 400 (use the download route)`,
      request: { params: PodParams, query: PathQuery("the file") },
      responses: {
        200: jsonResponse(FileContent, "The file's text"),
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { path } = c.req.valid("query");
      return c.json(unwrap(await readPodFile(serviceContext(c), c.get("caller").teamId, name, path)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "writePodFile",
      method: "put",
      path: "/{name}/files/content",
      summary: "Write a text file (created or replaced atomically; parent directories are created)",
      request: { params: PodParams, body: jsonBody(WriteRequest) },
      responses: {
        200: jsonResponse(PathResult("saved"), "Saved"),
        ...errors(400, 401, 403, 404, 409, 413, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      return c.json(
        unwrap(await writePodFile(serviceContext(c), c.get("caller").teamId, name, c.req.valid("json"))),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "uploadPodFile",
      method: "post",
      middleware: [fileUploadBodyLimit, requireAuth],
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
        ...errors(400, 401, 403, 404, 409, 413, 415, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const form = { body: c.req.raw.body, contentType: c.req.header("content-type") };
      return c.json(unwrap(await uploadPodFile(serviceContext(c), c.get("caller").teamId, name, form)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
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
        ...errors(400, 401, 403, 404, 409, 413, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { path } = c.req.valid("query");
      // waitUntil only for the host's closing answer of a transfer that lives and dies with this
      // response (best effort: the relay has ended the transfer either way).
      const file = unwrap(
        await downloadPodFile(serviceContext(c), c.get("caller").teamId, name, path, (work) =>
          c.executionCtx.waitUntil(work),
        ),
      );
      return c.body(file.body, 200, {
        "content-type": "application/octet-stream",
        ...(file.size === undefined ? {} : { "content-length": String(file.size) }),
        "content-disposition": attachmentDisposition(file.filename),
        "x-content-type-options": "nosniff",
      });
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "deletePodPath",
      method: "delete",
      path: "/{name}/files",
      summary: "Delete a file or a directory (recursively)",
      description: `${POD_PATH_ROOTS.join(", ")} and ${APP_ROOT} themselves cannot be deleted (400)`,
      request: { params: PodParams, query: PathQuery("the file or directory") },
      responses: {
        200: jsonResponse(PathResult("deleted"), "Deleted"),
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { path } = c.req.valid("query");
      return c.json(unwrap(await deletePodPath(serviceContext(c), c.get("caller").teamId, name, path)), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "renamePodPath",
      method: "post",
      path: "/{name}/files/rename",
      summary: "Rename or move a file or directory",
      description: "`new_path` must not exist (409); its parent directories are created",
      request: {
        params: PodParams,
        body: jsonBody(z.object({ old_path: PodPath("the source"), new_path: PodPath("the destination") })),
      },
      responses: {
        200: jsonResponse(
          StatusBody("renamed").extend({ old_path: z.string(), new_path: z.string() }),
          "Renamed",
        ),
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const body = c.req.valid("json");
      const moved = unwrap(
        await movePodPath(serviceContext(c), c.get("caller").teamId, name, "rename", {
          from: body.old_path,
          to: body.new_path,
        }),
      );
      return c.json({ status: "renamed" as const, old_path: moved.from, new_path: moved.to }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "copyPodPath",
      method: "post",
      path: "/{name}/files/copy",
      summary: "Copy a file or directory (recursively)",
      description:
        "Symlinks are copied as links, modes and times kept; `dest_path` must not exist (409), its parents are created",
      request: {
        params: PodParams,
        body: jsonBody(
          z.object({ source_path: PodPath("the source"), dest_path: PodPath("the destination") }),
        ),
      },
      responses: {
        200: jsonResponse(
          StatusBody("copied").extend({ source_path: z.string(), dest_path: z.string() }),
          "Copied",
        ),
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const body = c.req.valid("json");
      const copied = unwrap(
        await movePodPath(serviceContext(c), c.get("caller").teamId, name, "copy", {
          from: body.source_path,
          to: body.dest_path,
        }),
      );
      return c.json({ status: "copied" as const, source_path: copied.from, dest_path: copied.to }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "createPodFolder",
      method: "post",
      path: "/{name}/folders",
      summary: "Create a directory and any missing parents",
      request: { params: PodParams, body: jsonBody(z.object({ path: PodPath("the directory") })) },
      responses: {
        200: jsonResponse(PathResult("created"), "Created (or already there)"),
        ...errors(400, 401, 403, 404, 409, 503),
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const { path } = c.req.valid("json");
      return c.json(
        unwrap(await createPodFolder(serviceContext(c), c.get("caller").teamId, name, path)),
        200,
      );
    },
  );

filesRouter.openAPIRegistry.register("UploadForm", UploadForm);
