import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app";
import { call } from "./support/client";
import { documentedOperations } from "./support/openapi";

/** Every route the Worker serves under /api, as `METHOD /api/path/{param}`. */
function servedApiRoutes(): string[] {
  const routes = createApp()
    .routes.filter((r) => r.method !== "ALL" && r.path.startsWith("/api/"))
    .map((r) => `${r.method} ${r.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`);
  return [...new Set(routes)].sort();
}

describe("GET /openapi.json", () => {
  it("is a public OpenAPI 3.1 document with security schemes and servers", async () => {
    const res = await call("GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.body.openapi).toMatch(/^3\.1\./);
    expect(res.body.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(res.body.servers).toEqual([{ url: "http://localhost:8787" }]);
    expect(Object.keys(res.body.components.securitySchemes).sort()).toEqual(["bearer", "cookie"]);
    expect(res.body.components.securitySchemes.cookie).toMatchObject({ in: "cookie", name: "pod_session" });
  });

  it("documents every /api route the Worker serves", async () => {
    const documented = new Set((await documentedOperations()).map((op) => `${op.method} ${op.path}`));
    const served = servedApiRoutes();
    expect(served.length).toBeGreaterThan(25);
    expect(served.filter((route) => !documented.has(route))).toEqual([]);
  });

  it("documents nothing the Worker does not serve", async () => {
    const served = new Set(servedApiRoutes());
    const documented = (await documentedOperations()).map((op) => `${op.method} ${op.path}`);
    expect(documented.filter((route) => !served.has(route))).toEqual([]);
  });

  it("lists the control-plane paths of the spec", async () => {
    const documented = new Set((await documentedOperations()).map((op) => `${op.method} ${op.path}`));
    const expected = [
      "POST /api/auth/register",
      "POST /api/auth/login",
      "POST /api/auth/logout",
      "GET /api/auth/user",
      "POST /api/auth/forgot-password",
      "POST /api/auth/reset-password",
      "POST /api/auth/verify-email",
      "POST /api/auth/resend-verification",
      "GET /api/teams",
      "POST /api/teams",
      "POST /api/teams/switch",
      "GET /api/teams/{id}",
      "PUT /api/teams/{id}",
      "DELETE /api/teams/{id}",
      "GET /api/teams/{id}/members",
      "GET /api/teams/{id}/members/details",
      "POST /api/teams/{id}/members",
      "DELETE /api/teams/{id}/members/{uid}",
      "GET /api/teams/{id}/invitations",
      "POST /api/teams/{id}/invitations",
      "DELETE /api/teams/{id}/invitations/{invId}",
      "GET /api/invitations/{token}",
      "POST /api/invitations/accept",
      "GET /api/api-tokens",
      "POST /api/api-tokens",
      "DELETE /api/api-tokens/{id}",
      "GET /api/plans",
      "GET /api/presets",
      "GET /api/regions",
      "GET /api/runtimes",
    ];
    expect(expected.filter((route) => !documented.has(route))).toEqual([]);
  });

  it("gives every operation a unique camelCase operationId, a tag and an explicit security", async () => {
    const doc = (await call("GET", "/openapi.json")).body;
    const ids: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const where = `${method.toUpperCase()} ${path}`;
        // Client generators name their methods after it: verb + noun, e.g. listPodFiles.
        expect(op.operationId, where).toMatch(/^[a-z][A-Za-z0-9]*$/);
        expect(op.tags, where).toEqual([expect.any(String)]);
        // `[]` for a public operation: no operation falls back to a document-wide default.
        expect(op.security, where).toEqual(expect.any(Array));
        ids.push(op.operationId);
      }
    }
    expect(ids.length).toBeGreaterThan(60);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(ids).toEqual(expect.arrayContaining(["createPod", "listPods", "startPod", "createPodFromZip"]));
  });

  it("gives every operation a summary, and every error response an {error: string} schema", async () => {
    const doc = (await call("GET", "/openapi.json")).body;
    const resolve = (schema: any) =>
      schema?.$ref ? doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")] : schema;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        expect(op.summary, `${method} ${path}`).toEqual(expect.any(String));
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (Number(status) < 400) continue;
          const schema = resolve(response.content?.["application/json"]?.schema);
          expect(schema?.properties?.error?.type, `${method} ${path} ${status}`).toBe("string");
          expect(schema?.required, `${method} ${path} ${status}`).toContain("error");
        }
      }
    }
  });
});

describe("GET /docs", () => {
  it("is a public HTML reference page naming the operations", async () => {
    const res = await call("GET", "/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.body).toMatch(/^<!doctype html>/i);
    for (const path of ["/api/auth/register", "/api/teams/{id}/members", "/api/api-tokens", "/api/plans"]) {
      expect(res.body).toContain(path);
    }
    expect(res.body).toContain('href="/openapi.json"');
  });
});
