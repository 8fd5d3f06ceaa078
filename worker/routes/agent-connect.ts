import { Hono } from "hono";
import { callHost, hostAgentStub } from "../durable-objects/host-agent/client";
import { ApiError, unwrap } from "../http/errors";
import { type HostEnv, requireHostToken } from "../http/host-auth";
import { findHost, whyNotPlaceable } from "../services/hosts/hosts";

/**
 * Host-facing routes, authenticated with the host's agent token; not part of the public API.
 * - `GET /agent/connect`: where agents dial in (outbound from the host); the WebSocket is handed to
 *   that host's HostAgent Durable Object.
 * - `GET /agent/ping`: an operator's check that the host's agent answers, with the round-trip time,
 *   and whether the host takes pods (placeable: online, no problem reported, not drained).
 */
export const agentConnectRouter = new Hono<HostEnv>()
  .use("*", requireHostToken)
  .get("/connect", async (c) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw new ApiError("bad_request", "expected a WebSocket upgrade");
    }
    const host = c.get("host");
    const headers = new Headers(c.req.raw.headers);
    headers.set("x-podhost-host-id", host.id);
    headers.set("x-podhost-host-name", host.name);
    return hostAgentStub(c.env, host.id).fetch(new Request(c.req.raw.url, { headers }));
  })
  .get("/ping", async (c) => {
    const started = Date.now();
    unwrap(await callHost(c.env, c.get("host").id, "host.ping", {}, { timeoutMs: 5_000 }));
    // Whether the host takes pods right now (npm start says Ready only then).
    // Read afresh: the token's host row may come from the isolate's cache.
    const host = (await findHost(c.get("db"), c.get("host").id)) ?? c.get("host");
    const refused = whyNotPlaceable(host);
    return c.json({
      pong: true,
      host: c.get("host").name,
      rtt_ms: Date.now() - started,
      placeable: !refused,
      ...(refused ? { reason: refused } : {}),
    });
  });
