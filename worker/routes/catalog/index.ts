import { createRoute, z } from "@hono/zod-openapi";
import { jsonBodyLimit } from "../../http/body-limit";
import { requireAuth } from "../../http/middleware";
import { authenticated, createRouter, errors, jsonResponse, serviceContext } from "../../http/router";
import { listPlans, listPresets, listRegions, listRuntimes } from "../../services/catalog/catalog";

const tags = ["Catalog"];
const common = { tags, security: authenticated, middleware: [jsonBodyLimit, requireAuth] };

const Plan = z
  .object({
    slug: z.string(),
    name: z.string(),
    cpu: z.number().int(),
    memory: z.string(),
    disk: z.string(),
    monthly_price: z.number().int().openapi({ description: "cents" }),
    daily_price: z.number().int().openapi({ description: "cents" }),
    backups_kept: z.number().int(),
    database_services: z.boolean(),
  })
  .openapi("Plan");

const Preset = z
  .object({
    slug: z.string(),
    name: z.string(),
    port: z.number().int(),
    app_root: z.string(),
    public_root: z.string(),
  })
  .openapi("Preset");

const Region = z.object({ slug: z.string(), name: z.string(), available: z.boolean() }).openapi("Region");

const Runtime = z
  .object({ preset: z.string(), name: z.string(), versions: z.array(z.string()), default: z.string() })
  .openapi("Runtime");

export const catalogRouter = createRouter()
  .openapi(
    createRoute({
      ...common,
      operationId: "listPlans",
      method: "get",
      path: "/plans",
      summary: "Plans, smallest first (prices in cents)",
      responses: { 200: jsonResponse(z.object({ plans: z.array(Plan) }), "Plans"), ...errors(401) },
    }),
    (c) => c.json({ plans: listPlans() }, 200),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "listPresets",
      method: "get",
      path: "/presets",
      summary: "Pod presets",
      responses: { 200: jsonResponse(z.object({ presets: z.array(Preset) }), "Presets"), ...errors(401) },
    }),
    (c) => c.json({ presets: listPresets() }, 200),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "listRegions",
      method: "get",
      path: "/regions",
      summary: "Regions; `available` while the region has a connected host",
      responses: { 200: jsonResponse(z.object({ regions: z.array(Region) }), "Regions"), ...errors(401) },
    }),
    async (c) => c.json({ regions: await listRegions({ ctx: serviceContext(c) }) }, 200),
  )
  .openapi(
    createRoute({
      ...common,
      operationId: "listRuntimes",
      method: "get",
      path: "/runtimes",
      summary: "Runtimes and their versions per preset",
      responses: { 200: jsonResponse(z.object({ runtimes: z.array(Runtime) }), "Runtimes"), ...errors(401) },
    }),
    (c) => c.json({ runtimes: listRuntimes() }, 200),
  );
