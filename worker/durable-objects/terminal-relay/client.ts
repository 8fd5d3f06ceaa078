import type { Bindings } from "../../env";

/**
 * Web terminal sessions relayed through a TerminalRelay Durable Object (./object.ts), one object per
 * session, named `{hostId}/{uuid}` like a file transfer's relay: only that host's agent can dial it
 * (../../routes/agent-terminal.ts checks the id). Only the name crosses the control WebSocket.
 */

/** which socket a request to the relay brings (set by the Worker's routes, never by a client) */
export const RELAY_SIDE_HEADER = "x-podhost-terminal-side";

/** The relay object of session `id` (created on first use). */
export const terminalRelayStub = (env: Bindings, id: string) =>
  env.TERMINAL_RELAY.get(env.TERMINAL_RELAY.idFromName(id));

/** Hands the WebSocket upgrade `request` to session `id`'s relay as the `side` socket. */
export function joinTerminalRelay(
  env: Bindings,
  id: string,
  side: "browser" | "agent",
  request: Request,
): Promise<Response> {
  const headers = new Headers(request.headers);
  headers.set(RELAY_SIDE_HEADER, side);
  return terminalRelayStub(env, id).fetch(new Request(request.url, { headers }));
}
