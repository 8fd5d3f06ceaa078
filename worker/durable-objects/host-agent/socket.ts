import type { ControlMessage, Op } from "../../../shared/protocol";

/** What the agent's socket carries across hibernation: whose it is, and when it last wrote D1. */
export interface Attachment {
  hostId: string;
  connectedAt: number;
  /**
   * When a heartbeat last wrote the host's last_seen_at. Kept on the socket, not in the object: a
   * hibernating object is evicted between two heartbeats (~10 s idle, pings every 15 s), so a field
   * of the object would start at 0 on every wake and each heartbeat would write D1.
   */
  lastSeenAt?: number;
}

export const attachmentOf = (ws: WebSocket) => ws.deserializeAttachment() as Attachment;

/**
 * The HostAgent's end of the agent's WebSocket (hibernation API): accepting it, finding the open
 * one, sending on it, and what to say when there is none.
 */
export class AgentSocket {
  constructor(private readonly ctx: DurableObjectState) {}

  /**
   * The agent's upgrade, already authenticated by the Worker (which names the host). One agent per
   * host: a new connection replaces an old one (e.g. after a network partition); `replacing` runs
   * before each old one is closed.
   */
  async accept(request: Request, replacing: () => void): Promise<Response> {
    const hostId = request.headers.get("x-podhost-host-id");
    if (request.headers.get("upgrade") !== "websocket" || !hostId) {
      return new Response(JSON.stringify({ error: "expected an agent WebSocket upgrade" }), { status: 400 });
    }
    for (const old of this.ctx.getWebSockets()) {
      replacing();
      old.close(1000, "replaced by a newer connection");
    }
    const pair = new WebSocketPair();
    const [client, server] = Object.values(pair) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ hostId, connectedAt: Date.now() } satisfies Attachment);
    await this.ctx.storage.put("hostId", hostId);
    const hostName = request.headers.get("x-podhost-host-name");
    if (hostName) await this.ctx.storage.put("hostName", hostName);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** The agent's open socket, if one is connected. */
  open(): WebSocket | undefined {
    return this.ctx.getWebSockets().find((ws) => ws.readyState === WebSocket.OPEN);
  }

  /** Whether a socket other than `ws` is open: `ws` was replaced by a successor. */
  replaced(ws: WebSocket): boolean {
    return this.ctx.getWebSockets().some((s) => s !== ws && s.readyState === WebSocket.OPEN);
  }

  /** The host this object serves, once an agent has connected. */
  hostId(): Promise<string | undefined> {
    return this.ctx.storage.get<string>("hostId");
  }

  /** The server as its operator and the pod's owner know it: its name, else its id, once connected. */
  async serverName(): Promise<string | undefined> {
    return (await this.ctx.storage.get<string>("hostName")) ?? (await this.ctx.storage.get<string>("hostId"));
  }

  /** A reason of the host's own (component `host`), naming the server: "server fra-1's agent …". */
  async hostReason(what: string): Promise<string> {
    const name = await this.serverName();
    return `${name ? `server ${name}'s` : "the server's"} agent ${what} (host)`;
  }

  /** Why nothing can be sent, naming the server. */
  async notConnected(): Promise<string> {
    const name = await this.serverName();
    return name
      ? `server ${name} is unavailable: its agent is not connected; try again shortly`
      : "the server's agent has not connected yet; try again shortly";
  }

  send(ws: WebSocket, message: ControlMessage) {
    ws.send(JSON.stringify(message));
  }

  sendCall(
    ws: WebSocket,
    id: string,
    op: Op,
    params: unknown,
    options: { idempotencyKey: string; timeoutMs: number },
  ) {
    const { idempotencyKey, timeoutMs } = options;
    this.send(ws, { type: "control:call", id, idempotencyKey, op, params, timeoutMs });
  }
}
