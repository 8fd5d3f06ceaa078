import type { ErrorCode } from "../../shared/errors";
import type { DeployFailureClass } from "../../shared/protocol/git";
import { AgentError } from "../errors";

/**
 * A deploy that failed for a reason the user can act on: it ends as `{ok: false, class, message}`
 * (a DeployOutcome), never as an error of the command. The message is one line, redacted.
 */
export class DeployFailure extends Error {
  constructor(
    readonly cls: DeployFailureClass,
    message: string,
    /** the error code where an op answers with a result, when not the class's own (a refused URL: 400) */
    readonly code?: ErrorCode,
  ) {
    super(message);
    this.name = "DeployFailure";
  }
}

/**
 * The same failure where an op answers with a result rather than an outcome (`repo.branches`,
 * `repo.inspect`): an error code the API maps to a status, the class first in the message.
 */
export function asAgentError(f: DeployFailure): AgentError {
  const code =
    f.code ??
    (f.cls === "auth"
      ? "forbidden"
      : f.cls === "branch_not_found"
        ? "not_found"
        : f.cls === "repo_too_large"
          ? "payload_too_large"
          : f.cls === "timeout"
            ? "unavailable"
            : "unprocessable");
  return new AgentError(code, `${f.cls}: ${f.message}`);
}
