import type { ErrorCode } from "../shared/errors";

/** A failure a handler reports on purpose; its code crosses the wire and becomes the API's status. */
export class AgentError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "AgentError";
  }
}
