import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../../http/app-env";
import { clientIp } from "../../http/audit-trail";
import { jsonBodyLimit } from "../../http/body-limit";
import { ApiError } from "../../http/errors";
import { requireAuth } from "../../http/middleware";
import { enforceCallerRateLimit, enforceFairShare } from "../../http/rate-limit";
import { serviceContext } from "../../http/router";
import { auditRow, recordAudit } from "../../services/audit/record";
import { resourceOf } from "../../services/connectors/oauth";
import { registerTools } from "./tools";

/**
 * The one auth middleware, and on a 401 the challenge MCP clients follow to find the authorization
 * server (RFC 9728 §5.1): the protected resource metadata's address.
 */
const mcpAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  try {
    await requireAuth(c, next);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      const metadata = `${resourceOf(c.env)}/.well-known/oauth-protected-resource`;
      throw new ApiError(
        "unauthorized",
        error.message,
        {},
        { "WWW-Authenticate": `Bearer resource_metadata="${metadata}"` },
      );
    }
    throw error;
  }
};

/**
 * The MCP server (streamable HTTP, docs/mcp.md): stateless, one server and transport per request,
 * its tools bound to the caller of that request. Answers JSON, not an SSE stream: every tool
 * finishes within its request.
 */
export const mcpRouter = new Hono<AppEnv>()
  // No server-to-client stream and no session to end: a stateless server says so (MCP allows 405).
  .on(["GET", "DELETE"], "/", mcpAuth, (c) =>
    c.json({ error: `method ${c.req.method} not allowed on /mcp: this server is stateless; use POST` }, 405, {
      Allow: "POST",
    }),
  )
  .post("/", jsonBodyLimit, mcpAuth, async (c) => {
    const server = new McpServer({ name: "podhost", version: "1.0.0" });
    registerTools(server, {
      ctx: serviceContext(c),
      caller: c.get("caller"),
      country: (c.req.raw as { cf?: { country?: string } }).cf?.country,
      // Per account and team, not per IP: every user of an AI platform calls from its servers' IPs.
      limitCreate: () => enforceCallerRateLimit(c, "createPod"),
      limitFairShare: (kind, pod) => enforceFairShare(c.env, kind, c.get("caller").teamId, pod),
      audit: (entry, input, status) => {
        const caller = c.get("caller");
        const facts = {
          param: (name: string) =>
            name === "name" && typeof input.name === "string" ? input.name : undefined,
          body: input,
          query: undefined,
          response: undefined,
        };
        const row = auditRow(entry, facts, { caller, ip: clientIp(c), teamId: caller.teamId, status });
        if (row) c.executionCtx.waitUntil(recordAudit(c.get("db"), caller, [row]));
      },
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    return transport.handleRequest(c.req.raw);
  });
