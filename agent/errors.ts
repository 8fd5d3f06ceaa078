import type { Component, ErrorCode } from "../shared/errors";

/**
 * A failure a handler reports on purpose; its code crosses the wire and becomes the API's status.
 * `component` names where it failed when that is known (a workflow retries a step whose host lost
 * the control plane mid-command: shared/errors.ts `Component`).
 */
export class AgentError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly component?: Component,
  ) {
    super(message);
    this.name = "AgentError";
  }
}

/**
 * Errors of the agent's own HTTP calls to the control plane (the byte routes: backups, staged blobs,
 * relays). A cut connection there has the same `ECONNREFUSED`/`ECONNRESET` codes as a cut to the
 * Docker engine's socket, so such an error is marked where it is seen, and the handlers' guard
 * (../handlers/guard.ts) reports it as the control plane's rather than the engine's.
 */
const fromControlPlane = new WeakSet<object>();

/**
 * Marks `err` if it is a network failure (a system error code such as ECONNREFUSED or ECONNRESET, or
 * "socket hang up"); anything else seen on the same stream (an abort of ours, the failure of a body
 * piped into the request) stays the caller's.
 */
export function markControlPlane(err: unknown): void {
  if (typeof err !== "object" || err === null) return;
  const { code, message } = err as { code?: unknown; message?: unknown };
  const network = (typeof code === "string" && /^E[A-Z]+$/.test(code)) || message === "socket hang up";
  if (network) fromControlPlane.add(err);
}

/** A network failure talking to the control plane, as an AgentError that says so. */
export function controlPlaneUnreachable(what: string, err: unknown): AgentError {
  if (err instanceof AgentError) return err;
  const detail = err instanceof Error ? err.message || (err as { code?: string }).code : String(err);
  return new AgentError(
    "unavailable",
    `${what}: the control plane could not be reached (${detail || "connection lost"})`,
    "control_plane",
  );
}

export const isFromControlPlane = (err: unknown): boolean =>
  typeof err === "object" && err !== null && fromControlPlane.has(err);
