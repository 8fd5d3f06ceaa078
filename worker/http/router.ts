import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ServiceContext } from "../services/context";
import { createMailer } from "../services/mail/mailer";
import type { AppEnv } from "./app-env";
import { validationHook } from "./validation";

/** Every resource router: typed env, and validation failures answered as 400 `{error}` naming the field. */
export const createRouter = () => new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** What a route file's `register<Operation>(app)` adds its operation to. */
export type Router = ReturnType<typeof createRouter>;

export const serviceContext = (c: Context<AppEnv>): ServiceContext => {
  const db = c.get("db");
  return { db, env: c.env, mailer: createMailer(db, c.env) };
};

export const ErrorBody = z.object({ error: z.string() }).openapi("Error");

const errorMeaning: Record<number, string> = {
  400: "Invalid input; `error` names the field",
  401: "Missing or invalid credentials",
  402: "Payment required",
  403: "Not allowed",
  404: "Not found (also hides resources of other teams)",
  409: "Conflict with the current state",
  413: "Request body too large",
  415: "The body is not of the media type the route takes",
  429: "Rate limited; see the Retry-After header",
  503: "Service unavailable",
};

/** OpenAPI response entries for the error statuses a route can answer. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: errorMeaning[s] ?? "Error", content: { "application/json": { schema: ErrorBody } } },
    ]),
  );
}

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** Marks a route as needing a credential in the OpenAPI document. */
export const authenticated: Record<string, string[]>[] = [{ bearer: [] }, { cookie: [] }];

/**
 * Marks a route that takes a credential when one is sent but also answers without one: in OpenAPI the
 * empty requirement `{}` makes "no credential" one of the accepted choices. Public routes say `security: []`.
 */
export const optionallyAuthenticated: Record<string, string[]>[] = [{}, ...authenticated];

export const StatusBody = <S extends string>(status: S) => z.object({ status: z.literal(status) });
