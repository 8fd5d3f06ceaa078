import { Hono } from "hono";
import { AGENT_TOKEN_PREFIX } from "../../shared/protocol";
import type { AppEnv } from "../http/app-env";
import { ApiError } from "../http/errors";
import { hostAgentStub } from "../services/hosts/host-client";
import { findHostByAgentToken } from "../services/hosts/hosts";

/**
 * Where host agents dial in (outbound from the host). The per-host token is checked here; the
 * WebSocket itself is handed to that host's HostAgent Durable Object. Not part of the public API.
 */
export const agentConnectRouter = new Hono<AppEnv>().get("/connect", async (c) => {
  const token = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!token?.startsWith(AGENT_TOKEN_PREFIX)) throw new ApiError("unauthorized", "agent token required");
  const host = await findHostByAgentToken(c.get("db"), token);
  if (!host) throw new ApiError("unauthorized", "unknown agent token");
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError("bad_request", "expected a WebSocket upgrade");
  }
  const headers = new Headers(c.req.raw.headers);
  headers.set("x-podhost-host-id", host.id);
  return hostAgentStub(c.env, host.id).fetch(new Request(c.req.raw.url, { headers }));
});
