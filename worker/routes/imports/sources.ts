import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { errors, jsonResponse, type Router } from "../../http/router";
import { importSources } from "../../services/imports/sources";
import { Guide, Transfer, tags } from "./schemas";

const Route = z
  .object({ route: z.string(), name: z.string(), description: z.string(), transfer: Transfer })
  .openapi("ImportRoute");

const Platform = Guide.extend({ host_examples: z.array(z.string()) }).openapi("ImportPlatform");

const route = createRoute({
  tags,
  security: [],
  middleware: [jsonBodyLimit],
  operationId: "listImportSources",
  method: "get",
  path: "/sources",
  summary:
    "The import catalog (public, not rate limited): routes into a pod and platforms with manual guides; with `url`, what that URL is",
  request: {
    query: z.object({
      url: z
        .string()
        .max(2048)
        .optional()
        .openapi({ description: "a URL to classify", example: "https://example.com/" }),
    }),
  },
  responses: {
    200: jsonResponse(
      z.object({
        routes: z.array(Route),
        platforms: z.array(Platform),
        detected_source: z.string().optional().openapi({
          description: "with `url`: `site`, `unknown`, or an AI assistant's name (`claude`, `chatgpt`, …)",
        }),
        guide: Guide.optional().openapi({ description: "with `url` on a guided platform: its manual steps" }),
      }),
      "The catalog",
    ),
    ...errors(400),
  },
});

export function registerListImportSources(app: Router) {
  app.openapi(route, (c) => c.json(importSources(c.req.valid("query").url), 200));
}
