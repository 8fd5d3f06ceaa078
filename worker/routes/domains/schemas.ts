import { z } from "@hono/zod-openapi";
import { DOMAIN_STATUSES } from "../../db/schema";

/** Schemas the custom domain routes share (docs/domains.md). */

export const DomainParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "dom_4k2m9x0q7w3e5r8t1y6u" }),
});

export const Domain = z
  .object({
    id: z.string(),
    pod_name: z.string(),
    domain: z.string().openapi({ example: "www.example.com" }),
    status: z.enum(DOMAIN_STATUSES).openapi({
      description: "`pending` until the TXT record is verified; a `verified` domain is served by the pod",
    }),
    verification: z.object({
      type: z.literal("TXT"),
      name: z.string().openapi({ example: "_podhost-verify.www.example.com" }),
      value: z.string().openapi({ description: "what the TXT record must say" }),
    }),
    created_at: z.string(),
    verified_at: z.string().nullable(),
    tls_status: z.string().nullable().openapi({
      description:
        "podhost's extension: the edge's certificate for a verified domain (Cloudflare for SaaS). `null` while pending verification, then `pending`, `active`, `failed: <why validation fails>`, or `not_configured` where the service has no Cloudflare settings (local development)",
      example: "active",
    }),
  })
  .openapi("Domain");

export const tags = ["Domains"];
