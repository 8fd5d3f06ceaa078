import { createRoute, z } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { IMPORT_BODY_MAX_BYTES } from "../../../shared/limits";
import { unwrap } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { rateLimit } from "../../http/rate-limit";
import {
  authenticated,
  errors,
  jsonBody,
  jsonResponse,
  type Router,
  serviceContext,
} from "../../http/router";
import { ARTIFACT_TYPES } from "../../services/imports/artifact";
import { createImport } from "../../services/imports/create";
import { MAX_PAGES_LIMIT } from "../../services/imports/snapshot";
import { Pod, PodNameSchema } from "../pods/schemas";
import { Artifact, Guide, tags } from "./schemas";

const Paste = z
  .object({
    body: z.string().max(IMPORT_BODY_MAX_BYTES).optional().openapi({
      description: "single-file source",
      example: "<!doctype html><title>Hello</title><h1>Hello</h1>",
    }),
    files: z
      .array(
        z.object({
          path: z.string().min(1).max(255).openapi({ example: "index.html" }),
          content: z.string().max(IMPORT_BODY_MAX_BYTES),
        }),
      )
      .min(1)
      .max(1000)
      .optional()
      .openapi({ description: "a set of files; a `package.json` project is installed and built on the pod" }),
    title: z.string().max(200).optional(),
    source: z.string().max(100).optional().openapi({ description: "metadata only (where it came from)" }),
    type: z.enum(ARTIFACT_TYPES).optional().openapi({ description: "detected from the source when omitted" }),
    language: z
      .string()
      .max(30)
      .regex(/^[A-Za-z0-9+#._-]+$/, { message: "must be a language name such as python or typescript" })
      .optional()
      .openapi({ description: "hint for `code`" }),
  })
  .openapi("ImportPaste");

export const CreateImportRequest = z
  .object({
    url: z.string().min(1).max(2048).optional().openapi({ description: "page or artifact to import" }),
    paste: Paste.optional(),
    mode: z.enum(["site", "artifact"]).optional().openapi({
      description:
        "`site` forces a static snapshot; `artifact` reads the page as a shared artifact; omit to detect",
    }),
    max_pages: z
      .number()
      .int()
      .min(1)
      .max(MAX_PAGES_LIMIT)
      .optional()
      .openapi({ description: "caps a site crawl" }),
    single_page: z.boolean().optional().openapi({ description: "snapshot only the given page" }),
    name: PodNameSchema.optional().openapi({
      description:
        "derived from the title if omitted (a taken derived name gets a suffix); an explicit name is used as is (409 when taken)",
    }),
    region: z.string().max(40).optional(),
    server_id: z
      .string()
      .max(60)
      .optional()
      .openapi({ description: "place the pod on this server (as for POST /api/pods)" }),
    plan_slug: z.string().max(40).default("launch"),
    ssh_key: z.string().max(16_384).optional(),
    dry_run: z
      .boolean()
      .optional()
      .openapi({ description: "parse and return the artifact without creating a pod" }),
  })
  .openapi("CreateImportRequest");

const Accepted = z.object({ artifact: Artifact, pod: Pod, message: z.string() }).openapi("ImportAccepted");

const route = createRoute({
  tags,
  security: authenticated,
  middleware: [
    bodyLimit({
      maxSize: IMPORT_BODY_MAX_BYTES + 64 * 1024,
      onError: (c) =>
        c.json(
          { error: `request body too large: the limit is ${IMPORT_BODY_MAX_BYTES + 64 * 1024} bytes` },
          413,
        ),
    }),
    rateLimit("imports"),
    requireAuth,
  ],
  operationId: "createImport",
  method: "post",
  path: "/",
  summary:
    "Import a URL (site snapshot or an AI assistant's artifact) or pasted source into a new pod (202), or preview it (dry_run: 200)",
  request: { body: jsonBody(CreateImportRequest) },
  responses: {
    200: jsonResponse(
      z.object({ artifact: Artifact }),
      "dry_run: the artifact, content trimmed to the preview budget",
    ),
    202: jsonResponse(Accepted, "Accepted: the pod is `creating`; the files are pushed once it runs"),
    ...errors(400, 401, 402, 409, 413, 429, 503),
    422: jsonResponse(
      z.object({ error: z.string(), guide: Guide }),
      "The URL's platform does not let its code be fetched: `guide` carries the manual steps",
    ),
  },
});

export function registerCreateImport(app: Router) {
  app.openapi(route, async (c) => {
    const country = (c.req.raw as { cf?: { country?: string } }).cf?.country;
    const outcome = unwrap(
      await createImport({
        ctx: serviceContext(c),
        caller: c.get("caller"),
        input: c.req.valid("json"),
        country,
      }),
    );
    if (outcome.dryRun) return c.json({ artifact: outcome.artifact }, 200);
    return c.json({ artifact: outcome.artifact, pod: outcome.pod, message: outcome.message }, 202);
  });
}
