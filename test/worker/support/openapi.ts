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

/** Every operation of the published OpenAPI document: the shared source for "every route gets the auth tests". */
export async function documentedOperations(): Promise<Operation[]> {
  const doc = (await call("GET", "/openapi.json")).body as {
    paths: Record<string, Record<string, { security?: unknown[] }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        concrete: path.replace(/\{[^}]+\}/g, "x0"),
        secured: Array.isArray(op.security) && op.security.length > 0,
      })),
  );
}
