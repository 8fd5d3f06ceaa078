/**
 * A simulated host agent for the fleet bench (bench/scale.ts): a `ws` client that speaks the real wire
 * protocol (shared/protocol) to `GET /agent/connect` with a real agent token, as agent/connection/socket.ts
 * does, but with no Docker behind it. It says hello with an inventory, sends heartbeats (`agent:ping`,
 * answered by `control:pong`) and metrics (`agent:metrics`) when told to, and answers the control
 * plane's commands at once: `pod.create` as if the container started (`running`), `host.ping` and
 * `host.inventory` as the real handlers would, anything else `unavailable`.
 *
 * Messages are typed by the protocol's own types; the ones sent once per connection (hello) are also
 * parsed by its zod schemas before they go out, and every incoming message is parsed as the real agent
 * parses it.
 */
import WebSocket from "ws";
import { AGENT_VERSION } from "../../agent/version";
import {
  AgentHello,
  type AgentMessage,
  ControlMessage,
  type MetricSample,
  type OpResult,
  ops,
  type PodState,
  PROTOCOL_VERSION,
} from "../../shared/protocol";

export interface SimAgentOptions {
  /** `ws://127.0.0.1:<port>/agent/connect` */
  url: string;
  /** the host's agent token (`hat_…`) */
  token: string;
  /** what the hello reports the host has */
  inventory: PodState[];
  /** a command arrived (before it is answered): the bench times creates by it */
  onCall?: (op: string, params: unknown) => void;
}

type CallOutcome = { ok: true; data: unknown } | { ok: false; code: "unavailable"; message: string };

export class SimAgent {
  private ws: WebSocket | undefined;
  /** pings in flight by their `at` (unique per agent), resolved with the round trip in ms */
  private readonly pongs = new Map<number, { sent: number; resolve: (ms: number) => void }>();
  private lastAt = 0;
  private closed = false;
  /** whether the socket closed without our asking (e.g. the Worker restarted or refused it) */
  dropped = false;

  constructor(private readonly options: SimAgentOptions) {}

  /** Dials, says hello, and resolves with the ms until the control plane's welcome (hello handled). */
  connect(timeoutMs = 60_000): Promise<number> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.options.url, {
        headers: { authorization: `Bearer ${this.options.token}` },
        handshakeTimeout: timeoutMs,
        perMessageDeflate: false,
      });
      this.ws = ws;
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`no welcome within ${timeoutMs} ms`));
      }, timeoutMs);
      ws.on("unexpected-response", (req, res) => {
        req.destroy(); // ws leaves the request open when this event is listened for
        clearTimeout(timer);
        reject(new Error(`connect refused: HTTP ${res.statusCode}`));
      });
      ws.on("open", () => {
        (ws as unknown as { _socket?: { setNoDelay(v: boolean): void } })._socket?.setNoDelay(true);
        this.send(
          AgentHello().parse({
            type: "agent:hello",
            protocol: PROTOCOL_VERSION,
            agentVersion: AGENT_VERSION,
            inventory: this.options.inventory,
            problem: null,
          }),
        );
      });
      ws.on("message", (data) => {
        const parsed = ControlMessage.safeParse(JSON.parse(data.toString()));
        if (!parsed.success) return;
        const message = parsed.data;
        if (message.type === "control:welcome") {
          clearTimeout(timer);
          resolve(performance.now() - started);
        } else if (message.type === "control:pong") {
          const waiting = this.pongs.get(message.at);
          if (waiting) {
            this.pongs.delete(message.at);
            waiting.resolve(performance.now() - waiting.sent);
          }
        } else {
          this.options.onCall?.(message.op, message.params);
          const outcome = this.answer(message.op, message.params);
          this.send(
            outcome.ok
              ? { type: "agent:result", id: message.id, ok: true, data: outcome.data }
              : {
                  type: "agent:result",
                  id: message.id,
                  ok: false,
                  error: { code: outcome.code, message: outcome.message },
                },
          );
        }
      });
      ws.on("close", () => {
        clearTimeout(timer);
        if (!this.closed) this.dropped = true;
        // heartbeats in flight will never be answered
        for (const { resolve } of this.pongs.values()) resolve(Number.NaN);
        this.pongs.clear();
        reject(new Error("closed before the welcome"));
      });
      ws.on("error", () => {
        // the close event follows and settles the promise
      });
    });
  }

  get open(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** One heartbeat; resolves with its round trip in ms (never, if the socket is gone). */
  ping(): Promise<number> {
    const at = Math.max(Date.now(), this.lastAt + 1);
    this.lastAt = at;
    return new Promise((resolve) => {
      this.pongs.set(at, { sent: performance.now(), resolve });
      this.send({ type: "agent:ping", at });
    });
  }

  /** One metrics tick; samples beyond the protocol's 2,000 per message would be refused, as they are by the DO. */
  sendMetrics(samples: MetricSample[]): void {
    this.send({ type: "agent:metrics", samples });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const { resolve } of this.pongs.values()) resolve(Number.NaN);
    this.pongs.clear();
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once("close", () => resolve());
      ws.close(1000, "bench over");
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2_000).unref();
    });
  }

  private send(message: AgentMessage): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private answer(op: string, params: unknown): CallOutcome {
    if (op === "host.ping") return { ok: true, data: { pong: true } satisfies OpResult<"host.ping"> };
    if (op === "host.inventory") {
      return { ok: true, data: { pods: this.options.inventory } satisfies OpResult<"host.inventory"> };
    }
    if (op === "pod.create") {
      const spec = ops["pod.create"].params.safeParse(params);
      if (spec.success) {
        const state = {
          name: spec.data.name,
          state: "running",
          ip: "10.0.0.2",
        } satisfies OpResult<"pod.create">;
        this.options.inventory.push(state);
        return { ok: true, data: state };
      }
    }
    return { ok: false, code: "unavailable", message: `the simulated agent does not run ${op}` };
  }
}
