import Docker from "dockerode";
import { engineFullDiskReason, fullDisk } from "../disk/full";
import { AgentError, controlPlaneUnreachable, isFromControlPlane } from "../errors";
import { engineFailure, withoutHostDetails } from "./engine-errors";

export type DockerClient = Docker;

/** A dockerode client on the engine's unix socket. It holds no connection: each call dials anew, so an
 * engine restart needs nothing from us beyond the caller retrying. */
export function createDockerClient(socketPath: string): DockerClient {
  return new Docker({ socketPath });
}

interface DockerishError {
  statusCode?: number;
  code?: string;
  syscall?: string;
  json?: { message?: string } | null;
  reason?: string;
  message?: string;
}

const asDockerish = (err: unknown): DockerishError =>
  typeof err === "object" && err !== null ? (err as DockerishError) : {};

/** The HTTP status the engine answered with, if it answered at all. */
export const dockerStatus = (err: unknown): number | undefined => asDockerish(err).statusCode;

export const isNotFound = (err: unknown): boolean => dockerStatus(err) === 404;
export const isConflict = (err: unknown): boolean => dockerStatus(err) === 409;
/** 304: "already started" / "already stopped" — the state we wanted. */
export const isNotModified = (err: unknown): boolean => dockerStatus(err) === 304;

const CONNECT_CODES = new Set(["ECONNREFUSED", "ENOENT", "EACCES", "ECONNRESET", "EPIPE", "ETIMEDOUT"]);

/** The engine could not be reached (socket missing, refused, dropped mid-call). */
export function isEngineUnreachable(err: unknown): boolean {
  const e = asDockerish(err);
  if (e.statusCode !== undefined) return false;
  // ENOENT and EACCES are the socket's only when connecting: a file the agent could not open is not the engine
  const connectOnly = e.code === "ENOENT" || e.code === "EACCES";
  if (e.code && CONNECT_CODES.has(e.code) && (e.syscall === "connect" || !connectOnly)) return true;
  return /socket hang up/i.test(e.message ?? "");
}

/**
 * The engine's own words for a failed call ("No such container: x"), else the error's message: for
 * the agent's log, never for a tenant (they name host paths and ids: `toAgentError`, `engineReason`).
 */
export function dockerMessage(err: unknown): string {
  const e = asDockerish(err);
  return e.json?.message || e.reason || e.message || e.code || String(err);
}

/**
 * Turn anything a handler threw into an AgentError: ours pass through, a failed call to the control
 * plane (marked where it was made, ../errors.ts) is the control plane's, an unreachable engine is
 * `unavailable` (the control plane retries later), a full disk is named, and any other failure the
 * engine answered is told in words of our own (./engine-errors.ts): the engine's message names host
 * paths, ids and the host's prefix, so it stays in the agent's log (../handlers/guard.ts), and
 * whatever else reaches the tenant has those taken out. A message never ends empty.
 */
export function toAgentError(err: unknown, what: string): AgentError {
  if (err instanceof AgentError) return err;
  if (isFromControlPlane(err)) return controlPlaneUnreachable(what, err);
  if (isEngineUnreachable(err))
    return new AgentError(
      "unavailable",
      `${what}: docker engine unavailable (${withoutHostDetails(dockerMessage(err))})`,
      "engine",
    );
  // the agent's own write (its state directory: vhosts, domains, logs) on a full disk
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "ENOSPC" || code === "EDQUOT")
    return new AgentError(
      "conflict",
      `${what}: the host agent's disk is full (no space left to write its state)`,
      "storage",
    );
  // the engine's, e.g. "failed to copy files: userspace copy failed: write
  // /var/lib/docker/volumes/…/_data/…: no space left on device" while a new pod's home is filled, or
  // "mkdir /var/lib/docker/overlay2/…: no space left on device" on a full engine root: named, without
  // the host's paths
  const full = engineFullDisk(err);
  if (full) return new AgentError("conflict", `${what}: ${full}`, "storage");
  const status = dockerStatus(err);
  if (status !== undefined) {
    const failure = engineFailure(status, dockerMessage(err));
    return new AgentError(failure.code, `${what}: ${failure.reason}`, failure.component);
  }
  return new AgentError("internal", `${what}: ${withoutHostDetails(dockerMessage(err))}`);
}

/** The full disk an engine's answer tells of, named for the tenant (../disk/full.ts); else null. */
function engineFullDisk(err: unknown): string | null {
  const words = dockerMessage(err);
  const full = fullDisk(words);
  return full ? engineFullDiskReason(full, words) : null;
}

/** A failed engine call as a tenant may read it: ours in our words, the engine's without host details. */
export const engineReason = (err: unknown): string => {
  if (err instanceof AgentError) return err.message;
  const full = engineFullDisk(err);
  if (full) return full;
  const status = dockerStatus(err);
  return status === undefined
    ? withoutHostDetails(dockerMessage(err))
    : engineFailure(status, dockerMessage(err)).reason;
};
