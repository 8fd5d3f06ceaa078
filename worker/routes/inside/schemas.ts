import { z } from "@hono/zod-openapi";
import { ENV_FILE, ENV_NAME } from "../../../shared/protocol/inside";

/** The inside routes' shared schemas; a schema one route uses lives in that route's file. */

export const noNul = (s: string) => !s.includes("\0");

export const EnvName = z
  .string()
  .max(128)
  .regex(ENV_NAME, { message: "must match ^[A-Za-z_][A-Za-z0-9_]*$" })
  .openapi({ example: "API_URL" });

const EnvVars = z.record(z.string(), z.string()).openapi({ example: { API_URL: "https://api.example.com" } });

export const EnvFile = z
  .object({ path: z.string().openapi({ example: ENV_FILE }), vars: EnvVars })
  .openapi("EnvFile");
