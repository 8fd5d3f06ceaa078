import { call } from "./client";

export interface Operation {
  method: string;
  /** the documented path, e.g. `/api/teams/{id}` */
  path: string;
  /** the path with every parameter filled in, ready to call */
  concrete: string;
  secured: boolean;
  /** a request the operation's own schemas accept: path parameters that take only certain values, required query parameters and a body */
  sample: { path: Record<string, string>; query: string; body?: { contentType: string; schema: Schema } };
}

/** The part of JSON Schema the document uses. */
export interface Schema {
  type?: string | string[];
  $ref?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  enum?: unknown[];
  example?: unknown;
  format?: string;
  pattern?: string;
  additionalProperties?: Schema | boolean;
}

/** A value `schema` accepts: its example, its first enum value, else the smallest thing of its type. */
export function sampleOf(schema: Schema, components: Record<string, Schema> = {}): unknown {
  if (schema.$ref) return sampleOf(components[schema.$ref.split("/").pop() ?? ""] ?? {}, components);
  if (schema.example !== undefined) return schema.example;
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? [])
        out[key] = sampleOf(schema.properties?.[key] ?? {}, components);
      if (Object.keys(out).length === 0 && typeof schema.additionalProperties === "object")
        out.SAMPLE = sampleOf(schema.additionalProperties, components);
      return out;
    }
    case "array":
      return Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () =>
        sampleOf(schema.items ?? {}, components),
      );
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
    default:
      // strings: a pod-name-shaped word satisfies the name patterns, and most others
      return schema.pattern ? "sample-name" : "sample";
  }
}

const METHODS = new Set(["get", "post", "put", "patch", "delete"]);

type SecurityRequirements = Record<string, string[]>[];

/**
 * OpenAPI's rule: an operation's `security` replaces the document's; `[]` means public, and an empty
 * requirement `{}` among others makes the credential optional (POST /api/invitations/accept).
 */
const requiresCredential = (security: SecurityRequirements | undefined): boolean =>
  security !== undefined && security.length > 0 && security.every((req) => Object.keys(req).length > 0);

/** Every operation of the published OpenAPI document: the shared source for "every route gets the auth tests". */
export async function documentedOperations(): Promise<Operation[]> {
  const doc = (await call("GET", "/openapi.json")).body as {
    security?: SecurityRequirements;
    components?: { schemas?: Record<string, Schema> };
    paths: Record<
      string,
      Record<
        string,
        {
          security?: SecurityRequirements;
          parameters?: { in: string; name: string; required?: boolean; schema?: Schema; example?: unknown }[];
          requestBody?: { content: Record<string, { schema: Schema }> };
        }
      >
    >;
  };
  const components = doc.components?.schemas ?? {};
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        concrete: path.replace(/\{[^}]+\}/g, "x0"),
        secured: requiresCredential(op.security ?? doc.security),
        sample: {
          /** path parameters with an example or an enum (a value the route accepts); others are left out */
          path: Object.fromEntries(
            (op.parameters ?? [])
              .filter(
                (p) =>
                  p.in === "path" &&
                  (p.example !== undefined || p.schema?.example !== undefined || p.schema?.enum?.length),
              )
              .map((p): [string, string] => [
                p.name,
                String(p.example ?? sampleOf(p.schema ?? {}, components)),
              ]),
          ),
          query: new URLSearchParams(
            (op.parameters ?? [])
              .filter((p) => p.in === "query" && p.required)
              .map((p): [string, string] => [
                p.name,
                String(p.example ?? sampleOf(p.schema ?? {}, components)),
              ]),
          ).toString(),
          body: Object.entries(op.requestBody?.content ?? {}).map(([contentType, media]) => ({
            contentType,
            schema: media.schema.$ref
              ? ((components[media.schema.$ref.split("/").pop() ?? ""] ?? {}) as Schema)
              : media.schema,
          }))[0],
        },
      })),
  );
}
