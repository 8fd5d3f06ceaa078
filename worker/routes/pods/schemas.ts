import { z } from "@hono/zod-openapi";
import { PRESET_SLUGS } from "../../../shared/catalog";
import { POD_STATUSES } from "../../db/schema";

const NAME_RULE =
  "must be 3-40 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen";

export const PodNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{1,38}[a-z0-9]$/, { message: NAME_RULE })
  .openapi({ description: NAME_RULE, example: "my-site" });

export const Pod = z
  .object({
    id: z.string(),
    name: z.string(),
    preset: z.string(),
    status: z.enum(POD_STATUSES),
    ip: z.string(),
    domain: z.string(),
    ssh_port: z.number().int().nullable(),
    ssh_user: z.string(),
    cpu: z.number(),
    memory: z.string(),
    disk: z.string(),
    plan_slug: z.string(),
    app_root: z.string(),
    region: z.string(),
    server_name: z.string(),
    description: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    app_health_diagnosis: z.string().optional(),
  })
  .openapi("Pod");

const EnvName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "must be a valid environment variable name" });

export const Customizations = z
  .object({
    env_vars: z.record(EnvName.max(128), z.string().max(32_768)).optional(),
    cron_jobs: z
      .array(
        z.object({
          schedule: z.string().regex(/^(@(hourly|daily|weekly|monthly|yearly|reboot)|(\S+\s+){4}\S+)$/, {
            message: "must be a 5-field cron schedule or @hourly/@daily/@weekly/@monthly/@yearly/@reboot",
          }),
          command: z
            .string()
            .min(1)
            .max(1000)
            .regex(/^[^\n]*$/, { message: "must be one line" }),
        }),
      )
      .max(50)
      .optional(),
    workers: z
      .array(
        z.object({
          name: z
            .string()
            .regex(/^[a-z][a-z0-9-]{0,30}$/, { message: "must be lowercase letters, digits, hyphens" }),
          command: z
            .string()
            .min(1)
            .max(1000)
            .regex(/^[^\n]*$/, { message: "must be one line" }),
        }),
      )
      .max(10)
      .optional(),
  })
  .openapi("Customizations");

export const CreatePodRequest = z.object({
  name: PodNameSchema,
  preset: z.enum(PRESET_SLUGS),
  plan_slug: z.string().max(40).default("launch"),
  region: z.string().max(40).optional(),
  server_id: z.string().max(64).optional(),
  ssh_key: z.string().max(16_384).optional().openapi({
    description:
      "one OpenSSH public key line, checked like an account key; installed beside the account keys marked auto_inject",
  }),
  description: z.string().max(500).optional(),
  customizations: Customizations.optional(),
});

export const PodParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
});

export const Paging = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
});

export const PodList = z
  .object({
    pods: z.array(Pod),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
    status_counts: z.record(z.string(), z.number().int()),
  })
  .openapi("PodList");

export const Event = z
  .object({
    id: z.string(),
    type: z.string(),
    message: z.string(),
    metadata: z.string().optional().openapi({ description: "a JSON string; omitted when empty" }),
    created_at: z.string(),
  })
  .openapi("Event");
