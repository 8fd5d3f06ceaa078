import { z } from "@hono/zod-openapi";
import { ServiceType as ServiceTypeEnum } from "../../../shared/protocol/services";
import { SERVICE_STATUSES } from "../../db/schema";

/** Schemas the database service routes share (docs/services.md). */

export const ServiceType = ServiceTypeEnum
  // a copy made now: zod 4 gives `.openapi()` only to schemas built after @hono/zod-openapi loaded,
  // and the shared module may be evaluated before it (the order follows the bundle's imports)
  .clone()
  .openapi({
    description: "mysql (MariaDB 10.11), postgresql (14) or redis (7)",
    example: "postgresql",
  });

export const ServiceParams = z.object({
  name: z
    .string()
    .max(64)
    .openapi({ param: { name: "name", in: "path" } }),
  serviceType: ServiceType.openapi({ param: { name: "serviceType", in: "path" }, example: "postgresql" }),
});

export const Service = z
  .object({
    id: z.string(),
    pod_name: z.string(),
    service_type: ServiceType,
    status: z.enum(SERVICE_STATUSES).openapi({
      description: "`stopped` while the pod is not running (the services stop and start with it)",
    }),
    version: z.string().openapi({
      description: "what the server reports (e.g. 10.11.x for mysql, which is MariaDB); empty until it runs",
    }),
    host: z.string().openapi({ description: "where the pod's app reaches it", example: "127.0.0.1" }),
    port: z.number().int(),
    error_msg: z.string().optional().openapi({ description: "why the install failed (status error)" }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("DatabaseService");

export const ServiceCredentials = z
  .object({
    service_type: ServiceType,
    status: z.enum(SERVICE_STATUSES),
    host: z.string(),
    port: z.number().int(),
    username: z
      .string()
      .optional()
      .openapi({ description: "mysql and postgresql only", example: "pod_user" }),
    password: z.string().openapi({ description: "generated at install; shown only here" }),
    database: z
      .string()
      .optional()
      .openapi({ description: "mysql and postgresql only", example: "pod_user" }),
  })
  .openapi("DatabaseServiceCredentials");

export const tags = ["Database services"];
