import { createRoute, z } from "@hono/zod-openapi";
import { PRESET_SLUGS } from "../../../shared/catalog";
import { ZIP_UPLOAD_MAX_BYTES } from "../../../shared/limits";
import { ZIP_MAX_ENTRIES, ZIP_MAX_UNCOMPRESSED_BYTES } from "../../../shared/zip/policy";
import { zipUploadBodyLimit } from "../../http/body-limit";
import { ApiError, unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { fairShareLimit, rateLimit } from "../../http/rate-limit";
import { authenticated, createRouter, errors, jsonResponse, serviceContext } from "../../http/router";
import { describeIssues } from "../../http/validation";
import { discardStagedBlob, incomingStagingKey } from "../../services/blobs/staging";
import { stageZipForm } from "../../services/zip/form";
import { createPodFromZip } from "../../services/zip/from-zip";
import { uploadZipToPod } from "../../services/zip/reupload";
import { Pod, PodNameSchema, PodParams } from "../pods/schemas";

/**
 * ZIP archives, mounted at /api/pods beside the pods router: a new pod from an archive, and an
 * archive replacing an existing pod's app. `from-zip` cannot be taken for a pod name here: no
 * `POST /api/pods/{name}` route exists, and the re-upload is `POST /api/pods/{name}/zip`.
 */

const common = { tags: ["ZIP archives"], security: authenticated };

const RULES = `Top level must hold \`package.json\` or \`index.html\` (a single wrapping folder is refused, not stripped). Refused with 400: names with \`..\`, absolute or drive paths, backslashes, symlinks and device files, encrypted entries, methods other than stored/deflate, duplicate paths, more than ${ZIP_MAX_ENTRIES} entries, more than ${ZIP_MAX_UNCOMPRESSED_BYTES / 1024 / 1024} MiB unpacked, entries inflating over 1000:1. Over ${ZIP_UPLOAD_MAX_BYTES / 1024 / 1024} MiB: 413.`;

const ZipPart = z
  .string()
  .openapi({ type: "string", format: "binary", description: `the ZIP archive. ${RULES}` });

/** the form's text fields (the archive streams to storage as it arrives: ../../services/zip/form.ts) */
const FromZipFields = z.object({
  name: PodNameSchema.optional().openapi({
    description: "default: from the file's name plus a random tail (`my-site.zip` → `my-site-k3x9qa`)",
  }),
  preset: z.enum(PRESET_SLUGS).optional().openapi({
    description:
      "detected when omitted: `package.json` nodejs, `requirements.txt` python, `composer.json` or `index.php` php, else static. A preset the archive does not fit is 400",
  }),
  plan_slug: z.string().max(40).default("launch"),
  region: z.string().max(40).optional(),
  server_id: z
    .string()
    .max(64)
    .optional()
    .openapi({ description: "as for POST /api/pods: overrides region" }),
});

/**
 * The forms are documented from zod but referenced, not inlined: an inlined zod form would be
 * validated up front, which means reading it whole. Their fields may come in any order.
 */
const FromZipForm = z.object({ zip: ZipPart }).extend(FromZipFields.shape).openapi("FromZipForm");
const ZipForm = z.object({ zip: ZipPart }).openapi("ZipForm");
const multipart = (name: string) => ({
  required: true,
  content: { "multipart/form-data": { schema: { $ref: `#/components/schemas/${name}` } } },
});

/** the multipart request as the services read it */
const formOf = (c: { req: { raw: Request; header(name: string): string | undefined } }) => ({
  body: c.req.raw.body,
  contentType: c.req.header("content-type"),
});

const Uploaded = z
  .object({
    status: z.literal("uploaded"),
    files: z.number().int().openapi({ description: "regular files unpacked into ~/app" }),
  })
  .openapi("ZipUploaded");

const DepsFailure = z
  .object({ error: z.string(), deps_output: z.string() })
  .openapi({ description: "the files are in place but the dependency install or build failed" });

const FIELD_NAMES = Object.keys(FromZipFields.shape);

export const zipRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "createPodFromZip",
      method: "post",
      path: "/from-zip",
      summary:
        "Create a pod from a ZIP archive (202, status `creating`; the archive is in ~/app once it runs)",
      middleware: [zipUploadBodyLimit, rateLimit("createPod"), requireAuth],
      request: { body: multipart("FromZipForm") },
      responses: {
        202: jsonResponse(Pod, "Accepted"),
        ...errors(400, 401, 402, 409, 413, 415, 429, 503),
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const form = unwrap(await stageZipForm(ctx, formOf(c), incomingStagingKey(), FIELD_NAMES));
      const fields = FromZipFields.safeParse(Object.fromEntries(form.fields));
      if (!fields.success) {
        await discardStagedBlob(ctx.env, form.file.key);
        throw new ApiError("bad_request", describeIssues(fields.error.issues));
      }
      const country = (c.req.raw as { cf?: { country?: string } }).cf?.country;
      const input = { ...fields.data, zip: form.file };
      const view = unwrap(await createPodFromZip({ ctx, caller: c.get("caller"), input, country }));
      return c.json(view, 202);
    },
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "uploadPodZip",
      method: "post",
      path: "/{name}/zip",
      summary:
        "Replace the pod's app with a ZIP archive (a stopped pod is started first; its .env is kept unless the archive has one), then reload",
      middleware: [zipUploadBodyLimit, requireAuth, fairShareLimit("reload")],
      request: { params: PodParams, body: multipart("ZipForm") },
      responses: {
        200: jsonResponse(Uploaded, "Unpacked and reloaded"),
        500: jsonResponse(DepsFailure, "Unpacked, but installing dependencies failed"),
        // 402: a stopped pod of a suspended team is not started (docs/billing.md)
        ...errors(400, 401, 402, 404, 409, 413, 415, 429, 503),
      },
    }),
    async (c) => {
      const input = { ...c.req.valid("param"), form: formOf(c) };
      return c.json(
        unwrap(await uploadZipToPod({ ctx: serviceContext(c), teamId: c.get("caller").teamId, input })),
        200,
      );
    },
  );

zipRouter.openAPIRegistry.register("FromZipForm", FromZipForm);
zipRouter.openAPIRegistry.register("ZipForm", ZipForm);
