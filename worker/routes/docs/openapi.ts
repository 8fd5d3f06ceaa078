import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/app-env";

/** The OpenAPI 3.1 document, generated from the zod schemas that validate the requests. */
export function openApiDocument(app: OpenAPIHono<AppEnv>, serverUrl: string) {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "A session token from /api/auth/login, or an `ipk_` API token",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "cookie", {
    type: "apiKey",
    in: "cookie",
    name: "pod_session",
    description: "The session token; browsers of an https API send it as `__Host-pod_session` (docs/auth.md)",
  });
  return app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Pod hosting API",
      version: "1",
      description:
        "Host small web apps (static, PHP, Node.js, Python) in isolated pods. Errors are `{error}` with the status codes listed per operation; 429 carries Retry-After. Unknown body fields are ignored.",
    },
    servers: [{ url: serverUrl }],
  });
}
