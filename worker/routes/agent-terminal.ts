import { Hono } from "hono";
import { joinTerminalRelay } from "../durable-objects/terminal-relay/client";
import { hostOwnsRelay } from "../durable-objects/transfer-relay/client";
import { ApiError } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";

/**
 * `GET /agent/terminal/{id}`: the WebSocket a host's agent dials for a web terminal session the
 * control plane opened on it (`pod.terminal.open`, ../durable-objects/terminal-relay/). Authenticated
 * with the host's agent token; a host reaches only sessions named after its own id (404 otherwise).
 */
export const agentTerminalRouter = new Hono<HostEnv>().use("*", requireHostToken).get("/:id{.+}", (c) => {
  const id = c.req.param("id");
  if (!hostOwnsRelay(c.get("host").id, id)) throw new ApiError("not_found", "no such terminal session");
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
    throw new ApiError("bad_request", "expected a WebSocket upgrade");
  return joinTerminalRelay(c.env, id, "agent", c.req.raw);
});
