import { call } from "./client";

export interface Operation {
  method: string;
  /** the documented path, e.g. `/api/teams/{id}` */
  path: string;
  /** the path with every parameter filled in, ready to call */
  concrete: string;
  secured: boolean;
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
    paths: Record<string, Record<string, { security?: SecurityRequirements }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        concrete: path.replace(/\{[^}]+\}/g, "x0"),
        secured: requiresCredential(op.security ?? doc.security),
      })),
  );
}
