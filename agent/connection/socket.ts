import WebSocket from "ws";
import type { ControlMessage } from "../../shared/protocol";
import { ControlMessage as ControlMessageSchema } from "../../shared/protocol";
import type { Logger } from "../logger";
import { backoffDelay } from "./backoff";

export interface SocketOptions {
  url: string;
  token: string;
  log: Logger;
  /** called on every (re)connect, before any message is handled: send the hello here */
  onOpen: (send: (message: unknown) => void) => void | Promise<void>;
  onMessage: (message: ControlMessage, send: (message: unknown) => void) => void;
  heartbeatMs?: number;
}

/**
 * The agent's one outbound WebSocket to its host's Durable Object. Dials out (hosts sit behind NAT),
 * reconnects forever with jittered backoff, and heartbeats so a half-open connection is noticed.
 */
export class ControlSocket {
  private ws: WebSocket | undefined;
  private attempt = 0;
  private stopped = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private lastPong = Date.now();

  constructor(private readonly options: SocketOptions) {}

  start(): void {
    this.connect();
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Sends when the socket is open; false when it is not (the message is not queued). */
  send = (message: unknown): boolean => {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  };

  /** Close with 1000 and stop reconnecting. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.heartbeat);
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once("close", () => resolve());
      ws.close(1000, "agent shutting down");
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2_000).unref();
    });
  }

  private connect(): void {
    if (this.stopped) return;
    const { log } = this.options;
    const ws = new WebSocket(this.options.url, {
      headers: { authorization: `Bearer ${this.options.token}` },
      handshakeTimeout: 10_000,
      // No permessage-deflate (ws offers it by default, workerd accepts it): the agent's messages are
      // small JSON, and compressing them cost a zlib deflate and inflate context for the connection's
      // life (~0.3 MB of RSS) and CPU on every message, the hello with its inventory first.
      perMessageDeflate: false,
    });
    this.ws = ws;

    ws.on("unexpected-response", (req, res) => {
      log.warn("control plane refused the connection", { status: res.statusCode });
      req.destroy(); // ws leaves the request open when we listen for this event
      this.scheduleReconnect();
    });
    ws.on("open", () => {
      this.attempt = 0;
      this.lastPong = Date.now();
      (ws as unknown as { _socket?: { setNoDelay(v: boolean): void } })._socket?.setNoDelay(true);
      log.info("connected to control plane", { url: this.options.url });
      this.startHeartbeat(ws);
      Promise.resolve(this.options.onOpen(this.send)).catch((error) =>
        log.error("hello failed", { error: String(error) }),
      );
    });
    ws.on("message", (data) => {
      let parsed: ControlMessage;
      try {
        const result = ControlMessageSchema.safeParse(JSON.parse(data.toString()));
        if (!result.success) throw new Error(result.error.message);
        parsed = result.data;
      } catch (error) {
        log.warn("unparseable control message", { error: String(error) });
        return;
      }
      if (parsed.type === "control:pong") {
        this.lastPong = Date.now();
        return;
      }
      this.options.onMessage(parsed, this.send);
    });
    ws.on("close", (code, reason) => {
      clearInterval(this.heartbeat);
      if (this.ws === ws) this.ws = undefined;
      if (!this.stopped) log.warn("control plane connection closed", { code, reason: reason.toString() });
      this.scheduleReconnect();
    });
    ws.on("error", (error) => {
      log.warn("control plane connection error", { error: error.message });
    });
  }

  private startHeartbeat(ws: WebSocket): void {
    const every = this.options.heartbeatMs ?? 15_000;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastPong > every * 3) {
        this.options.log.warn("control plane stopped answering heartbeats; reconnecting");
        ws.terminate();
        return;
      }
      this.send({ type: "agent:ping", at: Date.now() });
    }, every);
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    const delay = backoffDelay(this.attempt++);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delay);
  }
}
