import { z } from "zod";

/**
 * One error vocabulary for the whole system: the API maps each code to an HTTP status at the edge,
 * and the agent protocol (issue 3) carries the same codes over the wire.
 */
export const ErrorCode = z.enum([
  "bad_request",
  "unauthorized",
  "payment_required",
  "forbidden",
  "not_found",
  "method_not_allowed",
  "conflict",
  "payload_too_large",
  "unsupported_media_type",
  "unprocessable",
  "rate_limited",
  "internal",
  "unavailable",
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/**
 * The part of the system a failure came from, where it is known: the control plane (the host could
 * not reach the Worker: a restart or a cut mid-command, which a workflow step retries once it is
 * back), the Docker engine, the pod itself, storage (R2, the host's disk), or the host's agent (it
 * did not finish or answer a command in time, or went away mid-command).
 */
export const Component = z.enum(["control_plane", "engine", "pod", "storage", "host"]);
export type Component = z.infer<typeof Component>;

/**
 * What an error thrown into our hands says, never empty: an Error's message, a thrown string, or
 * `fallback` (which names what failed) when that is blank or the value has no words of its own.
 */
export function reasonOf(error: unknown, fallback: string): string {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : "";
  return text.trim() ? text : fallback;
}

export const statusOfErrorCode = {
  bad_request: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const satisfies Record<ErrorCode, number>;

/** A failure as a value: services return it, the edge turns it into `{error, ...extra}` with a status. */
export interface Failure {
  readonly ok: false;
  readonly code: ErrorCode;
  readonly message: string;
  /** Extra fields the spec puts beside `error` (e.g. `ssh_ready`, `deps_output`). */
  readonly extra?: Record<string, unknown>;
  /** seconds until a refused (`rate_limited`) request may be tried again: the Retry-After header */
  readonly retryAfter?: number;
  /** where it failed (a host's answer says so); the edge never shows it, a workflow acts on it */
  readonly component?: Component;
}
export interface Success<T> {
  readonly ok: true;
  readonly value: T;
}
export type Result<T> = Success<T> | Failure;

export const ok = <T>(value: T): Success<T> => ({ ok: true, value });
export const fail = (code: ErrorCode, message: string, extra?: Record<string, unknown>): Failure => ({
  ok: false,
  code,
  message,
  ...(extra ? { extra } : {}),
});

/** A 429 with the seconds to wait, which the edge sends as Retry-After. */
export const rateLimited = (message: string, retryAfter: number): Failure => ({
  ok: false,
  code: "rate_limited",
  message,
  retryAfter,
});

/** A timeout as a reason says it: whole seconds, or milliseconds below one. */
export const durationText = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);
