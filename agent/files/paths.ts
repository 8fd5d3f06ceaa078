import { posix } from "node:path";
import { checkPodPath, POD_HOME, POD_PATH_ROOTS } from "../../shared/pod-paths";
import { AgentError } from "../errors";

/** The agent trusts no caller: every path is checked again with the Worker's own rules. */
export function podPath(field: string, input: string): string {
  const checked = checkPodPath(input);
  if (!checked.ok) throw new AgentError("bad_request", `${field}: ${checked.reason}`);
  return checked.path;
}

/** Deleting or moving these would break the pod (or is impossible): refused with 400. */
const PROTECTED = new Set<string>([...POD_PATH_ROOTS, `${POD_HOME}/app`]);

export function refuseProtected(field: string, path: string): void {
  if (PROTECTED.has(path))
    throw new AgentError(
      "bad_request",
      `${field}: ${path} cannot be removed or moved (delete its contents instead)`,
    );
}

/** A destination inside (or equal to) its source, lexically; the tools catch it through symlinks. */
export function refuseInside(field: string, from: string, to: string): void {
  if (to === from || to.startsWith(`${from}/`))
    throw new AgentError("bad_request", `${field}: must not be the source or inside it`);
}

export const parentOf = (path: string) => posix.dirname(path);
