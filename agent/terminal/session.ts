import { PassThrough, Writable } from "node:stream";
import WebSocket from "ws";
import {
  TERMINAL_CLOSE,
  TERMINAL_FRAME_MAX_BYTES,
  TERMINAL_WINDOW_BYTES,
  TerminalClientMessage,
  type TerminalServerMessage,
} from "../../shared/protocol/terminal";
import { dockerMessage, dockerStatus, engineReason } from "../docker/client";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import type { PodProcess, PodProcessLauncher } from "../ssh/pod-process";

/**
 * One web terminal session on the host (docs/dashboard.md "Terminal"): `bash -l` as pod_user with a
 * pty, started exactly as the SSH gateway starts a terminal session (../ssh/pod-process.ts: a
 * `docker exec` whose pty the engine allocates inside the container), its bytes carried over a
 * WebSocket this agent dials to the session's relay, beside the control socket.
 *
 * Bounds: output waits once TERMINAL_WINDOW_BYTES are unacknowledged by the browser (the pty is then
 * no longer read and its process blocks); keystrokes are taken only as fast as the pty takes them
 * (the socket is paused meanwhile) and acknowledged to the relay, which ends a session whose backlog
 * grows past its bound; a session idle (nothing either way) for the SSH gateway's idle timeout ends.
 */

export interface TerminalDeps {
  processes: PodProcessLauncher;
  apiUrl: string;
  agentToken: string;
  idleMs: number;
  log: Logger;
  /** the session did something in the pod (its input, its end): the SSH gateway's copy of authorized_keys is stale */
  podActivity?: () => void;
}

export interface TerminalRequest {
  pod: string;
  container: string;
  relay: string;
  cols: number;
  rows: number;
}

const DIAL_TIMEOUT_MS = 10_000;

/**
 * Starts the shell and dials the relay; resolves once both are up, with the session running on in
 * the background until the shell exits, the browser leaves or the session is idle. `ended` is
 * called once, when it is over.
 */
export async function openTerminal(
  deps: TerminalDeps,
  req: TerminalRequest,
  ended: () => void,
): Promise<void> {
  let proc: PodProcess;
  try {
    proc = await deps.processes.start(req.container, {
      argv: ["bash", "-l"],
      env: ["TERM=xterm-256color"],
      tty: { cols: req.cols, rows: req.rows },
    });
  } catch (err) {
    const status = dockerStatus(err);
    if (status === 404 || status === 409)
      throw new AgentError("conflict", `pod ${req.pod} is not running; start it first`);
    deps.log.warn("terminal start failed", { pod: req.pod, error: dockerMessage(err) });
    throw new AgentError("unavailable", `the terminal could not start: ${engineReason(err)}`);
  }
  let ws: WebSocket;
  try {
    const url = new URL(`/agent/terminal/${req.relay}`, deps.apiUrl);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    ws = await dial(url.toString(), deps.agentToken);
  } catch (err) {
    proc.hangUp();
    throw err instanceof AgentError
      ? err
      : new AgentError("unavailable", `the terminal's relay: ${String(err)}`);
  }
  runSession(deps, req, proc, ws).then(ended, (err: unknown) => {
    deps.log.error("terminal session failed", { pod: req.pod, error: String(err) });
    ended();
  });
}

function dial(url: string, token: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      handshakeTimeout: DIAL_TIMEOUT_MS,
      perMessageDeflate: false,
    });
    ws.on("error", (err) => reject(new AgentError("unavailable", `the terminal's relay: ${err.message}`)));
    ws.once("unexpected-response", (request, response) => {
      request.destroy(); // ws leaves the request open when this event is listened for
      reject(new AgentError("unavailable", `the terminal's relay answered ${response.statusCode}`));
    });
    ws.once("open", () => {
      // keystroke echoes are single small frames: without this each waits on Nagle + delayed ACK
      (ws as unknown as { _socket?: { setNoDelay(v: boolean): void } })._socket?.setNoDelay(true);
      resolve(ws);
    });
  });
}

async function runSession(deps: TerminalDeps, req: TerminalRequest, proc: PodProcess, ws: WebSocket) {
  let closed = false;
  let lastActivity = Date.now();
  const touch = () => {
    lastActivity = Date.now();
  };
  const send = (message: TerminalServerMessage) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  };
  const end = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    clearTimeout(idleTimer);
    proc.hangUp();
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason);
  };

  // Output: sent as binary frames while fewer than the window's bytes wait for the browser's ack;
  // past it the write's callback is held, so the stream from the pty stops being read.
  let unacked = 0;
  let held: (() => void) | null = null;
  const output = new Writable({
    highWaterMark: 16 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      if (closed || ws.readyState !== WebSocket.OPEN) return callback();
      ws.send(chunk, { binary: true });
      unacked += chunk.length;
      if (unacked < TERMINAL_WINDOW_BYTES) callback();
      else held = callback;
    },
  });
  const release = () => {
    if (held && unacked < TERMINAL_WINDOW_BYTES) {
      const callback = held;
      held = null;
      callback();
    }
  };

  // Input: keystrokes into the pty; the socket is paused while the pty's side is full, and what the
  // pty took is acknowledged to the relay (coalesced per turn of the event loop).
  const input = new PassThrough();
  let inputAck = 0;
  const acknowledge = (bytes: number) => {
    if (inputAck === 0)
      setImmediate(() => {
        const n = inputAck;
        inputAck = 0;
        if (n > 0) send({ type: "input-ack", bytes: n });
      });
    inputAck += bytes;
  };
  let activityAt = 0;
  proc.pipeInput(
    input,
    () => {
      touch();
      // the gateway's copy of authorized_keys is dropped at most once a second while someone types
      if (Date.now() - activityAt > 1_000) {
        activityAt = Date.now();
        deps.podActivity?.();
      }
    },
    false,
  );

  ws.on("message", (data, isBinary) => {
    touch();
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (bytes.length > TERMINAL_FRAME_MAX_BYTES) return end(TERMINAL_CLOSE.protocol, "frame too large");
    if (isBinary) {
      if (!input.write(bytes, () => acknowledge(bytes.length))) {
        ws.pause();
        input.once("drain", () => ws.resume());
      }
      return;
    }
    let message: TerminalClientMessage;
    try {
      const parsed = TerminalClientMessage().safeParse(JSON.parse(bytes.toString("utf8")));
      if (!parsed.success) throw new Error(parsed.error.message);
      message = parsed.data;
    } catch {
      return end(TERMINAL_CLOSE.protocol, "unreadable control message");
    }
    if (message.type === "resize") void proc.resize({ cols: message.cols, rows: message.rows });
    else {
      unacked = Math.max(0, unacked - message.bytes);
      release();
    }
  });
  ws.on("close", () => end(1000, "closed"));
  ws.on("error", (err) => deps.log.warn("terminal socket error", { pod: req.pod, error: err.message }));

  const checkIdle = () => {
    const idle = Date.now() - lastActivity;
    if (idle < deps.idleMs) {
      idleTimer = setTimeout(checkIdle, deps.idleMs - idle);
      return;
    }
    send({
      type: "error",
      status: 408,
      error: `the session was idle for ${Math.round(deps.idleMs / 60_000)} min and was closed`,
    });
    end(TERMINAL_CLOSE.idle, "idle");
  };
  let idleTimer = setTimeout(checkIdle, deps.idleMs);

  await proc.pipeOutput(output, output, touch);
  deps.podActivity?.();
  if (closed) return;
  let code = 255;
  try {
    code = await proc.exitCode(5_000);
  } catch {
    // the shell closed its output but lives on: hang it up below
  }
  send({ type: "exit", code });
  end(TERMINAL_CLOSE.exited, "the shell exited");
}
