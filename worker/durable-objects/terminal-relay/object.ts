import { DurableObject } from "cloudflare:workers";
import {
  TERMINAL_CLOSE,
  TERMINAL_FRAME_MAX_BYTES,
  TERMINAL_INPUT_BACKLOG_BYTES,
  TerminalClientMessage,
  TerminalServerMessage,
} from "../../../shared/protocol/terminal";
import type { Bindings } from "../../env";
import { RELAY_SIDE_HEADER } from "./client";

/** how long the agent's socket waits for the browser's (the Worker hands it over right after) */
export const BROWSER_WAIT_MS = 30_000;
/** a control message is a few dozen bytes */
const TEXT_FRAME_MAX = 1024;

/**
 * One web terminal session (docs/dashboard.md "Terminal"): the WebSocket the agent dialed for it and
 * the browser's, paired and passed through frame by frame, so the terminal's bytes never cross the
 * host's control socket (the HostAgent object) and a flooding terminal delays no other pod's command.
 *
 * The agent comes first (the Worker opens the session on the host, which answers once its socket is
 * here), then the browser. Frames are checked, not trusted: from the browser, binary frames of at
 * most TERMINAL_FRAME_MAX_BYTES and text frames that parse as a TerminalClientMessage; an `ack` is
 * passed on only up to the output actually sent to the browser. From the agent, `input-ack`s count
 * down the keystrokes it has not taken yet: past TERMINAL_INPUT_BACKLOG_BYTES (a paste into a pod
 * that does not read) the session ends rather than this object buffering without bound. Output is
 * bounded by the agent's window (TERMINAL_WINDOW_BYTES unacknowledged), the early bytes kept for a
 * browser still on its way included. Either side closing closes the other.
 *
 * Plain (not hibernatable) sockets: the object lives for one session, which is bounded by the
 * agent's idle timeout, and its counters must not be lost to an eviction.
 */
export class TerminalRelay extends DurableObject<Bindings> {
  private agent: WebSocket | undefined;
  private browser: WebSocket | undefined;
  /** the agent's frames that came before the browser */
  private early: (ArrayBuffer | string)[] = [];
  private over = false;
  private inputBacklog = 0;
  private outputUnacked = 0;
  private waitTimer: ReturnType<typeof setTimeout> | undefined;

  override async fetch(request: Request): Promise<Response> {
    const side = request.headers.get(RELAY_SIDE_HEADER);
    if (
      request.headers.get("upgrade")?.toLowerCase() !== "websocket" ||
      (side !== "agent" && side !== "browser")
    )
      return Response.json({ error: "expected a terminal WebSocket upgrade" }, { status: 400 });
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    // frames as ArrayBuffers (the compatibility date's default is Blob, which send() would stringify)
    (server as WebSocket & { binaryType: string }).binaryType = "arraybuffer";
    server.accept();
    if (side === "agent") this.joinAgent(server);
    else this.joinBrowser(server);
    return new Response(null, { status: 101, webSocket: client });
  }

  private joinAgent(ws: WebSocket) {
    if (this.agent || this.over) return ws.close(TERMINAL_CLOSE.gone, "this session already has its host");
    this.agent = ws;
    ws.addEventListener("message", (event) => this.fromAgent(event.data));
    ws.addEventListener("close", (event) =>
      this.end(event.code, event.reason || "the host ended the session"),
    );
    ws.addEventListener("error", () => this.end(TERMINAL_CLOSE.gone, "the host's connection failed"));
    this.waitTimer = setTimeout(() => {
      if (!this.browser) this.end(TERMINAL_CLOSE.gone, "the browser did not come");
    }, BROWSER_WAIT_MS);
  }

  private joinBrowser(ws: WebSocket) {
    if (this.browser || this.over || !this.agent) {
      ws.send(
        JSON.stringify({
          type: "error",
          status: 410,
          error: "this terminal session is over; open a new one",
        }),
      );
      return ws.close(TERMINAL_CLOSE.gone, "the session is over");
    }
    this.browser = ws;
    clearTimeout(this.waitTimer);
    ws.addEventListener("message", (event) => this.fromBrowser(event.data));
    ws.addEventListener("close", (event) => this.end(event.code, event.reason || "the browser left"));
    ws.addEventListener("error", () => this.end(TERMINAL_CLOSE.gone, "the browser's connection failed"));
    for (const frame of this.early) this.toBrowser(frame);
    this.early = [];
  }

  private fromBrowser(data: ArrayBuffer | string) {
    if (typeof data !== "string") {
      if (data.byteLength > TERMINAL_FRAME_MAX_BYTES)
        return this.end(TERMINAL_CLOSE.protocol, `a frame is at most ${TERMINAL_FRAME_MAX_BYTES} bytes`);
      this.inputBacklog += data.byteLength;
      if (this.inputBacklog > TERMINAL_INPUT_BACKLOG_BYTES)
        return this.end(TERMINAL_CLOSE.protocol, "input arrives faster than the pod reads it");
      return this.agent?.send(data);
    }
    const parsed =
      data.length <= TEXT_FRAME_MAX ? TerminalClientMessage().safeParse(parseJson(data)) : undefined;
    if (!parsed?.success) return this.end(TERMINAL_CLOSE.protocol, "unreadable control message");
    const message = parsed.data;
    if (message.type === "ack") {
      // never more than was sent: a client cannot make the agent send past its window
      const bytes = Math.min(message.bytes, this.outputUnacked);
      if (bytes === 0) return;
      this.outputUnacked -= bytes;
      return this.agent?.send(JSON.stringify({ type: "ack", bytes }));
    }
    this.agent?.send(JSON.stringify(message));
  }

  private fromAgent(data: ArrayBuffer | string) {
    if (typeof data === "string") {
      const parsed = TerminalServerMessage().safeParse(parseJson(data));
      if (!parsed.success) return;
      if (parsed.data.type === "input-ack") {
        this.inputBacklog = Math.max(0, this.inputBacklog - parsed.data.bytes);
        return;
      }
    }
    if (this.browser) this.toBrowser(data);
    else this.early.push(data);
  }

  private toBrowser(data: ArrayBuffer | string) {
    if (typeof data !== "string") this.outputUnacked += data.byteLength;
    this.browser?.send(data);
  }

  /** Over: both sockets closed, the first reason given to the side still there. */
  private end(code: number, reason: string) {
    if (this.over) return;
    this.over = true;
    clearTimeout(this.waitTimer);
    // 1005/1006 (no status, abnormal) cannot be sent; 1000 and the 4xxx codes pass through.
    const sendable = code === 1000 || (code >= 3000 && code <= 4999) ? code : TERMINAL_CLOSE.gone;
    for (const ws of [this.agent, this.browser]) {
      try {
        ws?.close(sendable, reason.slice(0, 120));
      } catch {
        // already closed
      }
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
