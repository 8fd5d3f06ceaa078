import { z } from "zod";
import { type Built, lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * The dashboard's web terminal (`GET /api/pods/{name}/terminal`, docs/dashboard.md "Terminal"): an
 * interactive shell as pod_user with a real pty, as the SSH gateway's terminal sessions have.
 *
 * Only the session's opening crosses the control WebSocket: `pod.terminal.open` names a
 * TerminalRelay (worker/durable-objects/terminal-relay/), the agent dials
 * `/agent/terminal/{relay}` with its own WebSocket and answers once that socket is up. The terminal's
 * bytes then go browser ⇄ relay ⇄ agent beside the control socket, so a flooding terminal never
 * queues in front of other pods' commands. Spread into `ops` in ./ops.ts.
 *
 * Frames on both sockets: binary frames are terminal bytes (keystrokes in, the pty's output out);
 * text frames are one JSON message of `TerminalClientMessage` (from the browser) or
 * `TerminalServerMessage` (from the agent).
 */

/** A terminal's width and height in character cells, as xterm and `stty size` count them. */
export const TERMINAL_COLS = { min: 2, max: 1000, default: 80 } as const;
export const TERMINAL_ROWS = { min: 1, max: 500, default: 24 } as const;
const Cols = lazy(() => z.number().int().min(TERMINAL_COLS.min).max(TERMINAL_COLS.max));
const Rows = lazy(() => z.number().int().min(TERMINAL_ROWS.min).max(TERMINAL_ROWS.max));

/**
 * Flow control: the agent sends at most this many output bytes the browser has not acknowledged
 * (`ack` messages, sent as xterm has drawn them), then stops reading the pty until an ack comes. So
 * a `yes` flood costs the host one paused process, never a growing buffer on the agent, in the relay
 * or in the Worker; and it runs only as fast as the browser draws.
 */
export const TERMINAL_WINDOW_BYTES = 256 * 1024;
/** keystrokes the relay has passed to the agent that the pty has not taken yet: past this the session ends */
export const TERMINAL_INPUT_BACKLOG_BYTES = 1024 * 1024;
/** the largest frame either side may send (a paste is sent in pieces of at most this) */
export const TERMINAL_FRAME_MAX_BYTES = 64 * 1024;
/** terminal sessions one pod may have open on its host at once (the fair share's per-pod figure) */
export const MAX_TERMINALS_PER_POD = 8;
/** terminal sessions one team's pods together may have open on one host at once (the fair share's per-team figure) */
export const MAX_TERMINALS_PER_TEAM = 16;

/**
 * Close codes past the WebSocket's own: 4000 + the HTTP status of a refusal (4409 pod not running,
 * 4429 too many sessions, 4503 host unavailable …), and these for a session's end.
 */
export const TERMINAL_CLOSE = {
  /** the shell exited (its status was sent as an `exit` message first) */
  exited: 1000,
  /** nothing moved either way for the idle timeout */
  idle: 4408,
  /** a frame too large, unparseable, or input faster than the pod reads it */
  protocol: 4400,
  /** the other side is gone (the agent restarted, the browser never came) */
  gone: 4410,
} as const;

export const TerminalClientMessage = lazy(() =>
  z.discriminatedUnion("type", [
    /** the browser's window changed: the pty gets the new size (SIGWINCH in the pod) */
    z.object({ type: z.literal("resize"), cols: Cols(), rows: Rows() }),
    /** the browser has drawn `bytes` more output bytes: the agent may send that many more */
    z.object({ type: z.literal("ack"), bytes: z.number().int().min(1).max(TERMINAL_WINDOW_BYTES) }),
  ]),
);
export type TerminalClientMessage = Built<typeof TerminalClientMessage>;

export const TerminalServerMessage = lazy(() =>
  z.discriminatedUnion("type", [
    /** the shell ended with this status; the socket closes next */
    z.object({ type: z.literal("exit"), code: z.number().int() }),
    /** why the session ended or was refused, in words for the person at the terminal */
    z.object({ type: z.literal("error"), status: z.number().int(), error: z.string() }),
    /** (agent → relay only) the pty took `bytes` more keystroke bytes */
    z.object({ type: z.literal("input-ack"), bytes: z.number().int().min(1) }),
  ]),
);
export type TerminalServerMessage = Built<typeof TerminalServerMessage>;

export const terminalOps = {
  /**
   * Start `bash -l` as pod_user in the pod's container with a pty of `cols`×`rows`, and connect it
   * to the relay `relay` (`/agent/terminal/{relay}`); answers once the agent's socket is up. At most
   * MAX_TERMINALS_PER_POD sessions of one pod and MAX_TERMINALS_PER_TEAM of `team`'s pods at once on
   * a host (429 beyond).
   */
  "pod.terminal.open": () => ({
    params: z.object({
      name: PodName,
      relay: z.string().min(1).max(200),
      team: z.string().min(1).max(64),
      cols: Cols(),
      rows: Rows(),
    }),
    result: z.object({ opened: z.literal(true) }),
  }),
};
